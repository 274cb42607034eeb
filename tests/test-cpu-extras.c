/*
 * test-cpu-extras.c -- the rest of ggml-cpu.h: the x86 feature queries against the flags Linux
 * reports in /proc/cpuinfo, the other architectures' queries (0 here), the row conversions'
 * values, and NUMA detection against the nodes listed in sysfs.
 */
#include <criterion/criterion.h>

#include "ggml-cpu.h"

#include <dirent.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* 1 when the first "flags" line of /proc/cpuinfo lists flag, 0 when not, -1 when unreadable */
static int cpuinfo_has(const char * flag) {
    FILE * f = fopen("/proc/cpuinfo", "r");
    if (f == NULL) {
        return -1;
    }
    char * line = NULL;
    size_t cap = 0;
    int found = -1;
    while (getline(&line, &cap, f) > 0) {
        if (strncmp(line, "flags", 5) != 0) {
            continue;
        }
        found = 0;
        for (char * tok = strtok(strchr(line, ':') + 1, " \t\n"); tok; tok = strtok(NULL, " \t\n")) {
            if (strcmp(tok, flag) == 0) {
                found = 1;
            }
        }
        break;
    }
    free(line);
    fclose(f);
    return found;
}

static void expect_flag(int got, const char * flag) {
    const int want = cpuinfo_has(flag);
    if (want < 0) {
        cr_skip_test("/proc/cpuinfo has no flags line");
    }
    cr_expect_eq(got, want, "%s: ggml says %d, /proc/cpuinfo says %d", flag, got, want);
}

#if defined(__x86_64__)
Test(cpu_features, avx512_vbmi_matches_cpuinfo) { expect_flag(ggml_cpu_has_avx512_vbmi(), "avx512vbmi"); }
Test(cpu_features, avx512_vnni_matches_cpuinfo) { expect_flag(ggml_cpu_has_avx512_vnni(), "avx512_vnni"); }
Test(cpu_features, avx_vnni_matches_cpuinfo) { expect_flag(ggml_cpu_has_avx_vnni(), "avx_vnni"); }
Test(cpu_features, bmi2_matches_cpuinfo) { expect_flag(ggml_cpu_has_bmi2(), "bmi2"); }
Test(cpu_features, amx_int8_matches_cpuinfo) { expect_flag(ggml_cpu_has_amx_int8(), "amx_int8"); }
#endif

Test(cpu_features, other_architectures_answer_zero) {
    cr_assert_eq(ggml_cpu_has_neon() + ggml_cpu_has_arm_fma() + ggml_cpu_has_fp16_va() + ggml_cpu_has_dotprod() +
                 ggml_cpu_has_matmul_int8() + ggml_cpu_has_sve() + ggml_cpu_has_sme() + ggml_cpu_has_sme2() +
                 ggml_cpu_has_riscv_v() + ggml_cpu_has_vsx() + ggml_cpu_has_vxe() + ggml_cpu_has_wasm_simd() +
                 ggml_cpu_has_llamafile(), 0);
    cr_assert_eq(ggml_cpu_get_sve_cnt(), 0);
    cr_assert_eq(ggml_cpu_get_rvv_vlen(), 0);
}

Test(cpu_convert, fp16_round_trip_and_rounding) {
    const float x[5] = { 1.0f, -2.5f, 65504.0f, 1.0f + 1.0f / 4096.0f, 0.0f };
    ggml_fp16_t h[5];
    float y[5];
    ggml_cpu_fp32_to_fp16(x, h, 5);
    ggml_cpu_fp16_to_fp32(h, y, 5);
    cr_assert_eq(h[0], 0x3c00);
    cr_assert_eq(h[1], 0xc100);
    cr_assert_eq(h[2], 0x7bff);
    cr_assert_eq(y[3], 1.0f, "1 + 2^-12 is a tie below half's step: rounds to even (1.0)");
    cr_assert_eq(y[1], -2.5f);
    cr_assert_eq(h[4], 0);
}

Test(cpu_convert, bf16_round_trip_and_rounding) {
    const float x[3] = { 1.0f, 3.140625f, 1.0f + 1.0f / 256.0f };
    ggml_bf16_t b[3];
    float y[3];
    ggml_cpu_fp32_to_bf16(x, b, 3);
    ggml_cpu_bf16_to_fp32(b, y, 3);
    cr_assert_eq(b[0].bits, 0x3f80);
    cr_assert_eq(y[1], 3.140625f);
    cr_assert_eq(y[2], 1.0f, "1 + 2^-8 is a tie: rounds to even (1.0)");
}

Test(cpu_convert, fp32_copies_and_i32_truncates) {
    const float x[4] = { 1.75f, -1.75f, 0.0f, 123456.0f };
    float y[4];
    int32_t i[4];
    ggml_cpu_fp32_to_fp32(x, y, 4);
    cr_assert_arr_eq(y, x, sizeof x);
    ggml_cpu_fp32_to_i32(x, i, 4);
    cr_assert(i[0] == 1 && i[1] == -1 && i[2] == 0 && i[3] == 123456);
}

static int sysfs_nodes(void) {
    DIR * d = opendir("/sys/devices/system/node");
    if (d == NULL) {
        return 0;
    }
    int n = 0;
    for (struct dirent * de; (de = readdir(d)) != NULL;) {
        int id;
        char rest;
        if (sscanf(de->d_name, "node%d%c", &id, &rest) == 1) {
            n++;
        }
    }
    closedir(d);
    return n;
}

Test(numa, is_numa_follows_the_nodes_sysfs_lists) {
    ggml_numa_init(GGML_NUMA_STRATEGY_DISTRIBUTE);
    ggml_numa_init(GGML_NUMA_STRATEGY_ISOLATE); /* a second call changes nothing, and does not abort */
    cr_assert_eq(ggml_is_numa(), sysfs_nodes() > 1, "sysfs lists %d nodes", sysfs_nodes());
}
