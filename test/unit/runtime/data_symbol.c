/*===- test/unit/runtime/data_symbol.c - A descriptor symbol that is data -===*
 *
 * Exports attn_model_descriptor as a 4-byte object, not a function: the
 * runtime must refuse it instead of calling into data.
 *
 *===----------------------------------------------------------------------===*/
__attribute__((visibility("default"))) const int attn_model_descriptor = 42;
