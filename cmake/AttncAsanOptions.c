/*===- cmake/AttncAsanOptions.c - ASan defaults of the asan build ---------===*
 *
 * Compiled into every executable of an ATTNC_SANITIZE=address build, so a
 * tool run by hand behaves as under ctest. LLVM's BumpPtrAllocator poisons
 * its slabs when the code that inlines it is instrumented: objects that
 * Debian's uninstrumented libMLIR then allocates in such a slab are never
 * unpoisoned, and reading them is a false "use-after-poison".
 * allow_user_poisoning=0 ignores those manual annotations (ASan still checks
 * every heap, stack and global access). ASAN_OPTIONS in the environment come
 * on top.
 *
 *===----------------------------------------------------------------------===*/
const char *__asan_default_options(void);
const char *__asan_default_options(void) { return "allow_user_poisoning=0"; }
