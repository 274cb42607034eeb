/*
 * Lets Criterion 2.4 (Debian's libcriterion3) run under ThreadSanitizer.
 *
 * Criterion's sandbox (BoxFort) puts a shared-memory arena at a random
 * address 0x200000000000 + r * 16 MiB, where r comes from rand_r(), and
 * retries a few times when the spot is taken. Under TSan nearly that whole
 * range is shadow memory or a reserved gap, so the arena cannot be placed and
 * the test program aborts ("Could not initialize inheritable arena") or
 * crashes on the NULL arena.
 *
 * This file is linked into the test programs of a GGML_SANITIZE=thread build
 * only. Because libcriterion references rand_r, the linker exports this
 * definition from the executable and libcriterion binds to it. Calls that come
 * from libcriterion get an r that puts the arena in
 * [0x550000000000, 0x568000000000), an application range TSan maps and
 * shadows (the one PIE executables load into); every other caller gets the C
 * library's rand_r unchanged. Not compiled with the sanitizer.
 */
#include <dlfcn.h>
#include <stdlib.h>
#include <string.h>

typedef int (*ggmlx_rand_r_fn)(unsigned int *);

static ggmlx_rand_r_fn ggmlx_real_rand_r(void) {
    static ggmlx_rand_r_fn real;
    ggmlx_rand_r_fn fn = __atomic_load_n(&real, __ATOMIC_ACQUIRE);
    if (fn == NULL) {
        void *sym = dlsym(RTLD_NEXT, "rand_r");
        if (sym == NULL) {
            abort();
        }
        memcpy(&fn, &sym, sizeof(fn));
        __atomic_store_n(&real, fn, __ATOMIC_RELEASE);
    }
    return fn;
}

static int ggmlx_called_from_criterion(const void *return_address) {
    Dl_info info;
    if (dladdr(return_address, &info) == 0 || info.dli_fname == NULL) {
        return 0;
    }
    return strstr(info.dli_fname, "libcriterion") != NULL;
}

int rand_r(unsigned int *seed) {
    int value = ggmlx_real_rand_r()(seed);
    if (!ggmlx_called_from_criterion(__builtin_return_address(0))) {
        return value;
    }
    /* BoxFort keeps r & 0x3fffff: 0x350000..0x367fff maps to 0x5500..0x5680 << 32. */
    const unsigned int first = 0x350000u;
    const unsigned int count = 0x018000u;
    return (int) (first + (unsigned int) value % count);
}
