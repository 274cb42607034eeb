/*
 * ggml-devices.c -- lists the backend registries and devices this build of ggmlx finds.
 *
 * usage: ggml-devices [--json] [--load PATH]... [--load-all]
 *   --json       print JSON instead of the table
 *   --load PATH  load a backend module first (may be repeated)
 *   --load-all   load every backend module found (ggml_backend_load_all) first
 * Exit status 0, 1 when a module named with --load could not be loaded, 2 on bad arguments.
 * A backend that is there but cannot be used (a CUDA build without a GPU or driver, a module
 * missing libcublas) is listed with the reason, so "0 devices" never goes unexplained.
 */
#include "ggml-backend.h"
#include "ggmlx-backend.h"
#include "ggmlx.h"

#include <stdbool.h>
#include <stdio.h>
#include <string.h>

#define MIB (1024.0 * 1024.0)

static const char * type_name(enum ggml_backend_dev_type type) {
    switch (type) {
    case GGML_BACKEND_DEVICE_TYPE_CPU:   return "CPU";
    case GGML_BACKEND_DEVICE_TYPE_GPU:   return "GPU";
    case GGML_BACKEND_DEVICE_TYPE_IGPU:  return "IGPU";
    case GGML_BACKEND_DEVICE_TYPE_ACCEL: return "ACCEL";
    case GGML_BACKEND_DEVICE_TYPE_META:  return "META";
    }
    return "?";
}

static const char * str_or(const char * s, const char * dflt) {
    return s != NULL ? s : dflt;
}

/* "async,events" for the caps that are set, "-" when none */
static const char * caps_string(const struct ggml_backend_dev_caps * c, char * buf, size_t size) {
    const struct {
        bool         on;
        const char * name;
    } caps[] = {
        { c->async, "async" },
        { c->host_buffer, "host_buffer" },
        { c->buffer_from_host_ptr, "from_host_ptr" },
        { c->events, "events" },
        { c->mmap_support, "mmap" },
    };
    size_t used = 0;
    buf[0] = '\0';
    for (size_t i = 0; i < sizeof caps / sizeof caps[0]; i++) {
        if (caps[i].on && used < size) {
            int w = snprintf(buf + used, size - used, "%s%s", used ? "," : "", caps[i].name);
            used += w > 0 ? (size_t) w : 0;
        }
    }
    return used ? buf : "-";
}

struct unavailable {
    char name[32];
    char why[448];
};

static size_t count_unavailable(void) {
    struct unavailable u;
    size_t             n = 0;
    while (ggmlx_backend_unavailable(n, u.name, sizeof u.name, u.why, sizeof u.why)) {
        n++;
    }
    return n;
}

static void print_table(void) {
    const size_t n_regs = ggml_backend_reg_count();
    printf("%zu backend registr%s\n", n_regs, n_regs == 1 ? "y" : "ies");
    printf("  %-12s %s\n", "registry", "devices");
    for (size_t i = 0; i < n_regs; i++) {
        ggml_backend_reg_t reg = ggml_backend_reg_get(i);
        printf("  %-12s %zu\n", str_or(ggml_backend_reg_name(reg), "?"), ggml_backend_reg_dev_count(reg));
    }

    const size_t n_unavail = count_unavailable();
    if (n_unavail > 0) {
        printf("\n%zu backend%s not usable here\n", n_unavail, n_unavail == 1 ? "" : "s");
        struct unavailable u;
        for (size_t i = 0; ggmlx_backend_unavailable(i, u.name, sizeof u.name, u.why, sizeof u.why); i++) {
            printf("  %-12s %s\n", u.name, u.why);
        }
    }

    const size_t n_devs = ggml_backend_dev_count();
    printf("\n%zu device%s\n", n_devs, n_devs == 1 ? "" : "s");
    printf("  %-3s %-12s %-6s %-10s %-22s %-32s %-14s %s\n", "#", "name", "type", "registry", "memory free/total MiB",
           "caps", "device_id", "description");
    for (size_t i = 0; i < n_devs; i++) {
        ggml_backend_dev_t dev = ggml_backend_dev_get(i);
        struct ggml_backend_dev_props p;
        memset(&p, 0, sizeof p);
        ggml_backend_dev_get_props(dev, &p);
        ggml_backend_reg_t reg = ggml_backend_dev_backend_reg(dev);
        char mem[32], caps[96];
        snprintf(mem, sizeof mem, "%.0f / %.0f", (double) p.memory_free / MIB, (double) p.memory_total / MIB);
        printf("  %-3zu %-12s %-6s %-10s %-22s %-32s %-14s %s\n", i, str_or(p.name, "?"), type_name(p.type),
               reg ? str_or(ggml_backend_reg_name(reg), "?") : "-", mem, caps_string(&p.caps, caps, sizeof caps),
               str_or(p.device_id, "-"), str_or(p.description, ""));
    }
}

static void json_string(const char * s) {
    if (s == NULL) {
        printf("null");
        return;
    }
    putchar('"');
    for (; *s != '\0'; s++) {
        const unsigned char c = (unsigned char) *s;
        if (c == '"' || c == '\\') {
            printf("\\%c", c);
        } else if (c < 0x20) {
            printf("\\u%04x", c);
        } else {
            putchar(c);
        }
    }
    putchar('"');
}

static const char * json_bool(bool b) {
    return b ? "true" : "false";
}

static void print_json(void) {
    const size_t n_regs = ggml_backend_reg_count();
    printf("{\n  \"build_info\": ");
    json_string(ggmlx_build_info());
    printf(",\n  \"registries\": [");
    for (size_t i = 0; i < n_regs; i++) {
        ggml_backend_reg_t reg = ggml_backend_reg_get(i);
        const size_t       n   = ggml_backend_reg_dev_count(reg);
        printf("%s\n    {\"name\": ", i ? "," : "");
        json_string(ggml_backend_reg_name(reg));
        printf(", \"devices\": [");
        for (size_t j = 0; j < n; j++) {
            printf("%s", j ? ", " : "");
            json_string(ggml_backend_dev_name(ggml_backend_reg_dev_get(reg, j)));
        }
        printf("]}");
    }
    printf("%s],\n  \"unavailable\": [", n_regs ? "\n  " : "");
    struct unavailable u;
    size_t             n_unavail = 0;
    for (; ggmlx_backend_unavailable(n_unavail, u.name, sizeof u.name, u.why, sizeof u.why); n_unavail++) {
        printf("%s\n    {\"name\": ", n_unavail ? "," : "");
        json_string(u.name);
        printf(", \"reason\": ");
        json_string(u.why);
        printf("}");
    }
    printf("%s],\n  \"devices\": [", n_unavail ? "\n  " : "");

    const size_t n_devs = ggml_backend_dev_count();
    for (size_t i = 0; i < n_devs; i++) {
        ggml_backend_dev_t dev = ggml_backend_dev_get(i);
        struct ggml_backend_dev_props p;
        memset(&p, 0, sizeof p);
        ggml_backend_dev_get_props(dev, &p);
        ggml_backend_reg_t reg = ggml_backend_dev_backend_reg(dev);
        printf("%s\n    {\"index\": %zu, \"name\": ", i ? "," : "", i);
        json_string(p.name);
        printf(", \"registry\": ");
        json_string(reg ? ggml_backend_reg_name(reg) : NULL);
        printf(", \"type\": \"%s\", \"description\": ", type_name(p.type));
        json_string(p.description);
        printf(", \"memory_free\": %zu, \"memory_total\": %zu, \"device_id\": ", p.memory_free, p.memory_total);
        json_string(p.device_id);
        printf(",\n     \"caps\": {\"async\": %s, \"host_buffer\": %s, \"buffer_from_host_ptr\": %s, "
               "\"events\": %s, \"mmap_support\": %s}}",
               json_bool(p.caps.async), json_bool(p.caps.host_buffer), json_bool(p.caps.buffer_from_host_ptr),
               json_bool(p.caps.events), json_bool(p.caps.mmap_support));
    }
    printf("%s]\n}\n", n_devs ? "\n  " : "");
}

static void usage(FILE * f) {
    fprintf(f, "usage: ggml-devices [--json] [--load PATH]... [--load-all]\n"
               "  --json       print JSON instead of a table\n"
               "  --load PATH  load the backend module at PATH first (may be repeated)\n"
               "  --load-all   load every backend module found (ggml_backend_load_all) first\n");
}

int main(int argc, char ** argv) {
    bool json = false, load_all = false;
    int  status = 0;

    /* arguments are checked before anything is loaded, so a typo loads nothing */
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--json") == 0) {
            json = true;
        } else if (strcmp(argv[i], "--load-all") == 0) {
            load_all = true;
        } else if (strcmp(argv[i], "--load") == 0 && i + 1 < argc) {
            i++;
        } else if (strcmp(argv[i], "-h") == 0 || strcmp(argv[i], "--help") == 0) {
            usage(stdout);
            return 0;
        } else {
            fprintf(stderr, "ggml-devices: bad argument '%s'%s\n", argv[i],
                    strcmp(argv[i], "--load") == 0 ? " (missing PATH)" : "");
            usage(stderr);
            return 2;
        }
    }

    if (load_all) {
        ggml_backend_load_all();
    }
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--load") == 0) {
            const char * path = argv[++i];
            if (ggml_backend_load(path) == NULL) {
                const char * why = ggmlx_last_error();
                fprintf(stderr, "ggml-devices: %s\n", why ? why : "cannot load the module");
                status = 1;
            }
        }
    }

    if (json) {
        print_json();
    } else {
        print_table();
    }
    return status;
}
