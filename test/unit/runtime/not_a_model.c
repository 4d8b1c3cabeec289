/*===- test/unit/runtime/not_a_model.c - A library that is no model -------===*
 *
 * A valid shared library without attn_model_descriptor: the runtime must
 * refuse it by name rather than crash.
 *
 *===----------------------------------------------------------------------===*/
__attribute__((visibility("default"))) int not_a_model(void) { return 42; }
