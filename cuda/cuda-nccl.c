/*
 * cuda-nccl.c -- finding and opening NCCL at run time (cuda-nccl.h).
 */
#include "cuda-nccl.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#ifdef GGMLX_USE_NCCL

#include <dlfcn.h>
#include <pthread.h>

/*
 * The table's pointer types are written out by hand; these checks hold them to nccl.h's
 * declarations. _Generic does not evaluate its operand, so naming the functions here makes no
 * reference to libnccl.
 */
#define GGMLX_SAME_TYPE(field, fn) \
    _Static_assert(_Generic(&fn, __typeof__(((struct ggmlx_nccl *) 0)->field): 1, default: 0), #fn " changed type")
GGMLX_SAME_TYPE(get_version, ncclGetVersion);
GGMLX_SAME_TYPE(comm_init_all, ncclCommInitAll);
GGMLX_SAME_TYPE(comm_destroy, ncclCommDestroy);
GGMLX_SAME_TYPE(comm_get_async_error, ncclCommGetAsyncError);
GGMLX_SAME_TYPE(group_start, ncclGroupStart);
GGMLX_SAME_TYPE(group_end, ncclGroupEnd);
GGMLX_SAME_TYPE(all_reduce, ncclAllReduce);
GGMLX_SAME_TYPE(get_error_string, ncclGetErrorString);
GGMLX_SAME_TYPE(get_last_error, ncclGetLastError);
#undef GGMLX_SAME_TYPE

static pthread_once_t    g_once = PTHREAD_ONCE_INIT;
static struct ggmlx_nccl g_api;
static bool              g_loaded;
static char              g_why[768];

/* dlsym's object pointer copied into a function pointer (ISO C leaves the cast undefined) */
static bool resolve(void * handle, const char * name, void * fn, size_t fn_size, const char * path, char * why,
                    size_t why_size) {
    dlerror();
    void * sym = dlsym(handle, name);
    if (sym == NULL) {
        const char * err = dlerror();
        snprintf(why, why_size, "'%s' has no %s (%s): not NCCL, or an NCCL older than 2.0", path, name,
                 err ? err : "symbol not found");
        return false;
    }
    memcpy(fn, &sym, fn_size);
    return true;
}

#define RESOLVE(field, name) resolve(handle, name, &api.field, sizeof api.field, path, why, why_size)

/* everything needed from one library, or false with the reason in why; the handle stays open on success */
static bool open_library(const char * path, char * why, size_t why_size) {
    dlerror();
    void * handle = dlopen(path, RTLD_NOW | RTLD_LOCAL);
    if (handle == NULL) {
        const char * err = dlerror();
        snprintf(why, why_size, "cannot open '%s': %s", path, err ? err : "unknown dlopen error");
        return false;
    }
    struct ggmlx_nccl api = { 0 };
    if (!RESOLVE(get_version, "ncclGetVersion") || !RESOLVE(comm_init_all, "ncclCommInitAll") ||
        !RESOLVE(comm_destroy, "ncclCommDestroy") || !RESOLVE(comm_get_async_error, "ncclCommGetAsyncError") ||
        !RESOLVE(group_start, "ncclGroupStart") || !RESOLVE(group_end, "ncclGroupEnd") ||
        !RESOLVE(all_reduce, "ncclAllReduce") || !RESOLVE(get_error_string, "ncclGetErrorString")) {
        goto err_close;
    }
    void * last = dlsym(handle, "ncclGetLastError");
    memcpy(&api.get_last_error, &last, sizeof api.get_last_error);
    dlerror(); /* its absence is not an error */
    const ncclResult_t r = api.get_version(&api.version);
    if (r != ncclSuccess) {
        snprintf(why, why_size, "'%s': ncclGetVersion failed: %s", path, api.get_error_string(r));
        goto err_close;
    }
    g_api = api;
    return true;

err_close:
    dlclose(handle);
    return false;
}

#undef RESOLVE

/* dst += s, cut to fit */
static void append(char * dst, size_t size, const char * s) {
    const size_t used = strnlen(dst, size);
    const size_t n    = strlen(s);
    const size_t room = size - used - 1;
    memcpy(dst + used, s, n < room ? n : room);
    dst[used + (n < room ? n : room)] = '\0';
}

static void load_once(void) {
    const char * env = getenv("GGMLX_NCCL_LIBRARY");
    if (env != NULL && env[0] != '\0') {
        /* the user named a library: falling back to another one would hide their mistake */
        g_loaded = open_library(env, g_why, sizeof g_why);
    } else {
        static const char * const names[] = { "libnccl.so.2", "libnccl.so" };
        g_why[0] = '\0';
        for (size_t i = 0; !g_loaded && i < sizeof names / sizeof names[0]; i++) {
            char one[384];
            g_loaded = open_library(names[i], one, sizeof one);
            if (!g_loaded) {
                append(g_why, sizeof g_why, i ? "; " : "");
                append(g_why, sizeof g_why, one);
            }
        }
        if (!g_loaded) {
            append(g_why, sizeof g_why, " (GGMLX_NCCL_LIBRARY names another path)");
        }
    }
    if (g_loaded) {
        g_why[0] = '\0';
    }
}

bool ggmlx_nccl_load(char * why, size_t why_size) {
    pthread_once(&g_once, load_once);
    if (why != NULL && why_size > 0) {
        snprintf(why, why_size, "%s", g_why);
    }
    return g_loaded;
}

int ggmlx_nccl_version(void) {
    return ggmlx_nccl_load(NULL, 0) ? g_api.version : 0;
}

const struct ggmlx_nccl * ggmlx_nccl_get(void) {
    return ggmlx_nccl_load(NULL, 0) ? &g_api : NULL;
}

void ggmlx_nccl_describe(const struct ggmlx_nccl * api, ncclResult_t r, ncclComm_t comm, char * buf, size_t size) {
    const char * text = api->get_error_string(r);
    const char * last = api->get_last_error ? api->get_last_error(comm) : NULL;
    snprintf(buf, size, "%s (NCCL result %d)%s%s", text ? text : "unknown error", (int) r,
             last && last[0] ? ": " : "", last && last[0] ? last : "");
}

#else /* !GGMLX_USE_NCCL */

bool ggmlx_nccl_load(char * why, size_t why_size) {
    if (why != NULL && why_size > 0) {
        snprintf(why, why_size, "this build has no NCCL support (GGML_NCCL=OFF, or nccl.h was not found)");
    }
    return false;
}

int ggmlx_nccl_version(void) {
    return 0;
}

#endif
