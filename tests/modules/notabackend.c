/*
 * notabackend.c -- a shared library that loads fine but is no backend module: it exports
 * neither ggml_backend_init nor ggml_backend_score. ggml_backend_load must refuse it.
 */
__attribute__((visibility("default"))) int ggmlx_test_not_a_backend(void);

int ggmlx_test_not_a_backend(void) {
    return 42;
}
