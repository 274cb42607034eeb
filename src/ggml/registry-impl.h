/*
 * registry-impl.h -- what registry.c and backend-load.c share inside libggml.
 *
 * The registry owns two lists: the backend registries (each with the module handle that
 * provided it, NULL when statically linked) and the devices. Both are guarded by one mutex and
 * no backend code ever runs while it is held (lookups work on snapshots), so a backend may call
 * the registry from inside its own vtable functions without deadlocking.
 */
#ifndef GGMLX_REGISTRY_IMPL_H
#define GGMLX_REGISTRY_IMPL_H

#include "ggml-backend-impl.h"

#include <stdbool.h>

#define GGMLX_INTERNAL __attribute__((visibility("hidden")))

enum ggmlx_reg_add {
    GGMLX_REG_ADDED,   /* registered now, with its devices */
    GGMLX_REG_ALREADY, /* the same registry was registered before: nothing changed */
    GGMLX_REG_FAILED,  /* refused (message already given) */
};

/* An error of func (ggmlx_error) when as_error, else a warning in the log only. */
GGMLX_INTERNAL void ggmlx_registry_report(bool as_error, const char * func, const char * fmt, ...)
    __attribute__((format(printf, 3, 4)));

/* Makes sure the statically linked backends are registered (once, through pthread_once). */
GGMLX_INTERNAL void ggmlx_registry_init(void);

/*
 * Adds reg and its devices. handle: the dlopen handle of the module reg came from (kept while
 * reg is registered), or NULL. Refusals are reported as errors of func when as_error,
 * otherwise logged as warnings (the bulk loaders must not abort under GGMLX_ON_ERROR=abort).
 */
GGMLX_INTERNAL enum ggmlx_reg_add ggmlx_registry_add(ggml_backend_reg_t reg, void * handle, const char * func,
                                                     bool as_error);

/*
 * Removes reg and its devices; *handle gets the module handle it was added with. false when
 * reg is not registered.
 */
GGMLX_INTERNAL bool ggmlx_registry_remove(ggml_backend_reg_t reg, void ** handle);

/*
 * Records that the backend called name (as registries name themselves: "CUDA") was found but
 * cannot be used here, and why, for ggmlx_backend_unavailable. Registering a registry of that
 * name with devices later drops the note. false when the same note was there already.
 */
GGMLX_INTERNAL bool ggmlx_registry_note_unavailable(const char * name, const char * why);

/* true when a registry of that name (any case) is registered */
GGMLX_INTERNAL bool ggmlx_registry_has_name(const char * name);

/*
 * Scans dir (or, when dir is NULL, the executable's directory, libggml's directory and the
 * current directory) for modules of the backend called name -- libggml-<name>.so or
 * libggml-<name>-*.so -- and loads the one with the highest ggml_backend_score. NULL when none
 * could be loaded (warnings logged). Exported, unlike the helpers above, so tests can scan for
 * a backend name that ggml_backend_load_all does not know.
 */
ggml_backend_reg_t ggmlx_backend_load_best(const char * name, const char * dir);

#endif /* GGMLX_REGISTRY_IMPL_H */
