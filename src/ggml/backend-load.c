/*
 * backend-load.c -- backend modules: ggml_backend_load/unload, ggml_backend_load_all(_from_path).
 *
 * A module is a shared library exporting ggml_backend_init (required) and ggml_backend_score
 * (optional; 0 means "cannot run on this machine"). Its registry must carry this library's
 * GGML_BACKEND_API_VERSION: our vtables extend upstream's, so a module built against upstream's
 * headers (or an older ggmlx) is refused before any of its vtable entries is called.
 */
#include "registry-impl.h"

#include "ggmlx.h"

#include <ctype.h>
#include <dirent.h>
#include <dlfcn.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/*
 * Backend names ggml_backend_load_all looks for, in upstream's spirit: accelerators first, the
 * CPU last. A name already registered (statically linked, or loaded before) is skipped.
 */
static const char * const g_known_backends[] = {
    "blas", "cuda", "hip", "metal", "vulkan", "sycl", "opencl", "rpc", "sim", "cpu",
};

/* dlsym's object pointers become function pointers by copying: ISO C leaves the cast undefined */
static ggml_backend_score_t score_fn(void * handle) {
    ggml_backend_score_t fn  = NULL;
    void *               sym = dlsym(handle, "ggml_backend_score");
    memcpy(&fn, &sym, sizeof fn);
    return fn;
}

static ggml_backend_init_t init_fn(void * handle) {
    ggml_backend_init_t fn  = NULL;
    void *              sym = dlsym(handle, "ggml_backend_init");
    memcpy(&fn, &sym, sizeof fn);
    return fn;
}

/* Why the module at path cannot run here, in its own words when it has them (copied: it is closed next). */
static void unavailable_reason(void * handle, const char * path, int score, char * why, size_t size) {
    ggmlx_backend_unavailable_reason_t fn  = NULL;
    void *                             sym = dlsym(handle, GGMLX_BACKEND_UNAVAILABLE_REASON);
    memcpy(&fn, &sym, sizeof fn);
    const char * r = fn != NULL ? fn() : NULL;
    if (r != NULL && r[0] != '\0') {
        snprintf(why, size, "'%s' is not supported on this machine: %s", path, r);
    } else {
        snprintf(why, size, "'%s' is not supported on this machine (ggml_backend_score returned %d)", path, score);
    }
}

/*
 * Opens the module at path and asks its score: > 0 usable, 0 not here, -1 when it has no
 * ggml_backend_score. Returns the open handle when the module may be used, else NULL with the
 * reason in why (dlerror's text, or the module's own reason).
 */
static void * open_scored(const char * path, int * score, char * why, size_t why_size) {
    dlerror();
    void * handle = dlopen(path, RTLD_NOW | RTLD_LOCAL);
    if (handle == NULL) {
        const char * err = dlerror();
        snprintf(why, why_size, "cannot load '%s': %s", path, err ? err : "unknown dlopen error");
        return NULL;
    }
    const ggml_backend_score_t fn = score_fn(handle);
    *score = fn != NULL ? fn() : -1;
    if (fn != NULL && *score <= 0) {
        unavailable_reason(handle, path, *score, why, why_size);
        dlclose(handle);
        return NULL;
    }
    return handle;
}

/* Registers the module behind handle (closed on failure). Errors of func when as_error, else warnings. */
static ggml_backend_reg_t register_module(void * handle, const char * path, const char * func, bool as_error) {
    const ggml_backend_init_t init = init_fn(handle);
    if (init == NULL) {
        ggmlx_registry_report(as_error, func, "'%s' is not a ggml backend module (it exports no ggml_backend_init)",
                              path);
        goto err_close;
    }
    ggml_backend_reg_t reg = init();
    if (reg == NULL) {
        ggmlx_registry_report(as_error, func, "ggml_backend_init of '%s' returned NULL", path);
        goto err_close;
    }
    if (reg->api_version != GGML_BACKEND_API_VERSION) {
        ggmlx_registry_report(as_error, func,
                              "'%s' was built for backend API version %d, this library needs %d "
                              "(modules built against upstream ggml's headers cannot be loaded)",
                              path, reg->api_version, GGML_BACKEND_API_VERSION);
        goto err_close;
    }

    switch (ggmlx_registry_add(reg, handle, func, as_error)) {
    case GGMLX_REG_ADDED:
        if (as_error) {
            ggmlx_ok();
        }
        return reg;
    case GGMLX_REG_ALREADY:
        /* loaded before: the registry holds the first handle, this one only raised the count */
        dlclose(handle);
        if (as_error) {
            ggmlx_ok();
        }
        return reg;
    case GGMLX_REG_FAILED:
        break;
    }
err_close:
    dlclose(handle);
    return NULL;
}

/* Loads and registers one module. Failures are errors of func when as_error, else warnings. */
static ggml_backend_reg_t load_module(const char * path, const char * func, bool as_error) {
    if (path == NULL || path[0] == '\0') {
        /* dlopen would hand back the main program for these */
        ggmlx_registry_report(as_error, func, "path is %s", path == NULL ? "NULL" : "empty");
        return NULL;
    }
    char   why[PATH_MAX + 256];
    int    score  = -1;
    void * handle = open_scored(path, &score, why, sizeof why);
    if (handle == NULL) {
        ggmlx_registry_report(as_error, func, "%s", why);
        return NULL;
    }
    return register_module(handle, path, func, as_error);
}

ggml_backend_reg_t ggml_backend_load(const char * path) {
    ggmlx_registry_init();
    return load_module(path, __func__, true);
}

void ggml_backend_unload(ggml_backend_reg_t reg) {
    ggmlx_registry_init();
    if (reg == NULL) {
        ggmlx_error(__func__, "reg is NULL");
        return;
    }
    void * handle = NULL;
    if (!ggmlx_registry_remove(reg, &handle)) {
        ggmlx_error(__func__, "registry %p is not registered", (void *) reg);
        return;
    }
    /*
     * The module stays mapped (its handle is deliberately never closed): backends, buffers and
     * events made from its devices may still be alive in the program, and every call on them
     * jumps into the module's code. Unregistering only hides it from lookups; loading it again
     * registers the same registry anew.
     */
    (void) handle;
    ggmlx_ok();
}

/* ---- scanning for modules ---------------------------------------------------------------------- */

/* libggml-<name>.so exactly, or libggml-<name>-<variant>.so */
static bool is_candidate(const char * file, const char * name, bool * exact) {
    static const char prefix[] = "libggml-";
    static const char suffix[] = ".so";
    const size_t lp = sizeof prefix - 1, ln = strlen(name), ls = sizeof suffix - 1, lf = strlen(file);
    if (lf < lp + ln + ls || strncmp(file, prefix, lp) != 0 || strncmp(file + lp, name, ln) != 0 ||
        strcmp(file + lf - ls, suffix) != 0) {
        return false;
    }
    *exact = lf == lp + ln + ls;
    return *exact || file[lp + ln] == '-';
}

/* the directory part of path, in place; false when there is none */
static bool strip_to_dir(char * path) {
    char * slash = strrchr(path, '/');
    if (slash == NULL) {
        return false;
    }
    if (slash == path) {
        slash[1] = '\0'; /* the root */
    } else {
        *slash = '\0';
    }
    return true;
}

static const int g_anchor = 0; /* an object of libggml, so dladdr can name the library's file */

/* The default search directories: the executable's, libggml's, the current one (no repeats). */
static size_t default_dirs(char dirs[][PATH_MAX]) {
    size_t n = 0;
    ssize_t len = readlink("/proc/self/exe", dirs[n], PATH_MAX - 1);
    if (len > 0) {
        dirs[n][len] = '\0';
        n += strip_to_dir(dirs[n]);
    }
    Dl_info info;
    /* realpath: the loader's name may be "bin/../lib/libggml.so.0", which messages would repeat */
    if (dladdr(&g_anchor, &info) != 0 && info.dli_fname != NULL && realpath(info.dli_fname, dirs[n]) != NULL) {
        if (strip_to_dir(dirs[n]) && (n == 0 || strcmp(dirs[n], dirs[0]) != 0)) {
            n++;
        }
    }
    if (getcwd(dirs[n], PATH_MAX) != NULL) {
        bool seen = false;
        for (size_t i = 0; i < n; i++) {
            seen = seen || strcmp(dirs[i], dirs[n]) == 0;
        }
        n += !seen;
    }
    return n;
}

/* "CUDA" for "cuda": registries name themselves in capitals */
static void upper_name(char * out, size_t size, const char * name) {
    size_t i = 0;
    for (; name[i] != '\0' && i + 1 < size; i++) {
        out[i] = (char) toupper((unsigned char) name[i]);
    }
    out[i] = '\0';
}

ggml_backend_reg_t ggmlx_backend_load_best(const char * name, const char * dir) {
    ggmlx_registry_init();
    if (name == NULL || name[0] == '\0') {
        return NULL;
    }
    char   dirs[3][PATH_MAX];
    size_t n_dirs = 0;
    if (dir != NULL) {
        snprintf(dirs[0], PATH_MAX, "%s", dir);
        n_dirs = 1;
    } else {
        n_dirs = default_dirs(dirs);
    }

    /* the best scored module and an unscored one under the plain name stay open until the end */
    char   best[PATH_MAX] = "", fallback[PATH_MAX] = "";
    void * best_handle = NULL, * fallback_handle = NULL;
    int    best_score  = 0;
    char   why[PATH_MAX + 256] = ""; /* why the first module that cannot be used was left out */
    for (size_t d = 0; d < n_dirs; d++) {
        DIR * dp = opendir(dirs[d]);
        if (dp == NULL) {
            continue;
        }
        for (struct dirent * e; (e = readdir(dp)) != NULL;) {
            bool exact;
            if (!is_candidate(e->d_name, name, &exact)) {
                continue;
            }
            char path[PATH_MAX];
            if (snprintf(path, sizeof path, "%s/%s", dirs[d], e->d_name) >= (int) sizeof path) {
                continue;
            }
            char   this_why[sizeof why];
            int    s      = -1;
            void * handle = open_scored(path, &s, this_why, sizeof this_why);
            if (handle == NULL) {
                if (why[0] == '\0') {
                    memcpy(why, this_why, sizeof why);
                }
            } else if (s > best_score) {
                if (best_handle != NULL) {
                    dlclose(best_handle);
                }
                best_handle = handle;
                best_score  = s;
                strcpy(best, path);
            } else if (s < 0 && exact && fallback_handle == NULL) {
                /* a module without a score is only taken under the backend's plain name */
                fallback_handle = handle;
                strcpy(fallback, path);
            } else {
                dlclose(handle);
            }
        }
        closedir(dp);
    }

    if (best_handle != NULL) {
        if (fallback_handle != NULL) {
            dlclose(fallback_handle);
        }
        return register_module(best_handle, best, "ggml_backend_load_all", false);
    }
    if (fallback_handle != NULL) {
        return register_module(fallback_handle, fallback, "ggml_backend_load_all", false);
    }
    if (why[0] != '\0') {
        /* an optional backend this machine cannot run (no GPU, no driver, no libcublas): one line
         * per process, not one per scan */
        char upper[32];
        upper_name(upper, sizeof upper, name);
        const bool first = ggmlx_registry_note_unavailable(upper, why);
        ggmlx_log(first ? GGML_LOG_LEVEL_INFO : GGML_LOG_LEVEL_DEBUG, "ggml_backend_load_all: %s module not used: %s\n",
                  upper, why);
        return NULL;
    }
    ggmlx_log(GGML_LOG_LEVEL_DEBUG, "ggml_backend_load_all: no module for backend '%s'\n", name);
    return NULL;
}

void ggml_backend_load_all_from_path(const char * dir_path) {
    ggmlx_registry_init();
    if (dir_path != NULL) {
        DIR * dp = opendir(dir_path);
        if (dp == NULL) {
            ggmlx_error(__func__, "cannot open directory '%s'", dir_path);
            return;
        }
        closedir(dp);
    }
    for (size_t i = 0; i < sizeof g_known_backends / sizeof g_known_backends[0]; i++) {
        if (!ggmlx_registry_has_name(g_known_backends[i])) {
            ggmlx_backend_load_best(g_known_backends[i], dir_path);
        }
    }
    /* a module named outright, as in upstream; failures are logged (this call returns nothing) */
    const char * env = getenv("GGML_BACKEND_PATH");
    if (env != NULL && env[0] != '\0' && load_module(env, "GGML_BACKEND_PATH", false) == NULL) {
        ggmlx_log(GGML_LOG_LEVEL_ERROR, "%s: GGML_BACKEND_PATH='%s' was not loaded (see above)\n", __func__, env);
    }
    ggmlx_ok();
}

void ggml_backend_load_all(void) {
    ggml_backend_load_all_from_path(NULL);
}
