#!/usr/bin/env python3
"""Generate tests/test-abi.c, the ABI test of docs/architecture.md section 1.

    python3 scripts/gen-abi-test.py            # writes tests/test-abi.c
    python3 scripts/gen-abi-test.py --check    # exit 1 if tests/test-abi.c is out of date

Inputs (all in the tree, so the build never needs this script or network access):
  tests/abi/enums.tsv        upstream enumerators and their values
  tests/abi/layout.tsv       upstream struct sizes/offsets, type traits, #define values
  tests/abi/functions.tsv    every upstream public function and its header
  tests/abi/signatures.tsv   upstream prototypes (types), one per function
  include/*.h                our headers: which headers we ship, what they declare

The expected values always come from the tables, never from our headers: our headers only
decide what is checked (a header we do not ship yet is skipped; an upstream function is checked
once one of our headers declares it). Something a shipped header should declare but does not
becomes a failing runtime expectation, not a compile error, so the report lists every gap.

The generated file is valid C11 and C++17 (tests/test-abi-cxx.cpp includes it).
"""
import argparse
import os
import re
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
ABI = os.path.join(ROOT, 'tests', 'abi')
INCLUDE = os.path.join(ROOT, 'include')
OUT = os.path.join(ROOT, 'tests', 'test-abi.c')

# Headers in the order they are included; only those present in include/ are used.
HEADERS = ['ggml.h', 'ggml-cpu.h', 'ggml-backend.h', 'ggml-alloc.h', 'ggml-cuda.h', 'gguf.h', 'ggml-opt.h']

# Our library only defines ggml-cuda.h's functions in CUDA builds; its constants and enums are
# still checked whenever the header exists.
NO_FUNCTION_CHECK_HEADERS = {'ggml-cuda.h'}

# functions.tsv rows that are macro residue of upstream's declarations, not functions.
PSEUDO_FUNCTIONS = {'__attribute__', '__declspec', 'GGML_DEPRECATED'}


def read_tsv(name):
    rows = []
    with open(os.path.join(ABI, name), encoding='utf-8') as f:
        for line in f:
            line = line.rstrip('\n')
            if not line or line.startswith('#'):
                continue
            rows.append(line.split('\t'))
    return rows


def strip_comments(text):
    text = re.sub(r'/\*.*?\*/', ' ', text, flags=re.S)
    return re.sub(r'//[^\n]*', ' ', text)


def read_header(name):
    with open(os.path.join(INCLUDE, name), encoding='utf-8') as f:
        return strip_comments(f.read())


def matching_paren(text, i):
    """index just past the ')' that closes the '(' at text[i]"""
    depth = 0
    for j in range(i, len(text)):
        if text[j] == '(':
            depth += 1
        elif text[j] == ')':
            depth -= 1
            if depth == 0:
                return j + 1
    raise ValueError('unbalanced parentheses')


def declared_functions(header_text):
    """name -> (return type, parameter list) for every GGML_API/GGML_BACKEND_API function"""
    text = re.sub(r'(?m)^\s*#.*$', ' ', header_text)
    out = {}
    for m in re.finditer(r'\b(?:GGML_API|GGML_BACKEND_API)\b', text):
        rest = text[m.end():]
        f = re.search(r'\b(g(?:gml|guf)\w*)\s*\(', rest)
        semi = rest.find(';')
        if not f or (semi >= 0 and f.start() > semi):
            continue
        ret = ' '.join(rest[:f.start()].split())
        p0 = f.end() - 1
        params = ' '.join(rest[p0 + 1:matching_paren(rest, p0) - 1].split())
        out[f.group(1)] = (ret, params)
    return out


def struct_fields(header_text, struct):
    """field names appearing in `struct NAME { ... };`, or None if the struct is not defined"""
    m = re.search(r'\bstruct\s+' + re.escape(struct) + r'\s*\{', header_text)
    if not m:
        return None
    depth, i = 1, m.end()
    while depth:
        depth += {'{': 1, '}': -1}.get(header_text[i], 0)
        i += 1
    return set(re.findall(r'\b\w+\b', header_text[m.end():i - 1]))


def c_string(s):
    return '"' + s.replace('\\', '\\\\').replace('"', '\\"') + '"'


def fn_pointer(name, ret, params, var):
    """`RET (*const VAR)(PARAMS) = NAME;` -- params may be types only or named"""
    return 'static %s (*const %s)(%s) = %s;' % (ret, var, params or 'void', name)


def normalize(sig):
    """a prototype reduced to its shape, to compare ours with upstream's in the report"""
    s = re.sub(r'\s+', ' ', sig).strip()
    s = re.sub(r'\s*([*,()\[\]])\s*', r'\1', s)
    return s


def param_types(params):
    """drop parameter names (best effort, for the comparison in the report only)"""
    out = []
    keywords = {'const', 'struct', 'enum', 'unsigned', 'signed', 'long', 'short', 'volatile', 'int', 'char'}
    for p in [p.strip() for p in params.split(',')] if params.strip() else []:
        is_array = re.search(r'\[[^\]]*\]$', p) is not None
        p = re.sub(r'\[[^\]]*\]$', '', p).strip()
        if p in ('void', '...'):
            out.append(p)
            continue
        toks = re.findall(r'\w+|\*', p)
        if len(toks) >= 2 and re.fullmatch(r'\w+', toks[-1]) and toks[-2] not in ('struct', 'enum') \
                and toks[-1] not in keywords:
            toks = toks[:-1]
        if is_array:
            toks.append('*')
        out.append(' '.join(toks))
    return ','.join(normalize(t) for t in out)


def generate():
    shipped = [h for h in HEADERS if os.path.exists(os.path.join(INCLUDE, h))]
    texts = {h: read_header(h) for h in shipped}
    all_text = '\n'.join(texts.values())
    identifiers = set(re.findall(r'\b\w+\b', all_text))

    enums = read_tsv('enums.tsv')
    layout = read_tsv('layout.tsv')
    functions = [r for r in read_tsv('functions.tsv') if r[2] not in PSEUDO_FUNCTIONS]
    signatures = {r[2]: (r[1], r[3], r[4]) for r in read_tsv('signatures.tsv')}

    report = []          # lines printed at the end: what could not be checked the upstream way
    counts = {}

    # ---- enums
    enum_lines = []
    n_enum = 0
    for _, header, enum, name, value in enums:
        if header not in shipped:
            continue
        n_enum += 1
        if name in identifiers:
            enum_lines.append('    ABI_ENUM(%s, %s);' % (name, value))
        else:
            enum_lines.append('    ABI_MISSING("enumerator %s of enum %s (%s)");' % (name, enum, header))
            report.append('missing enumerator: %s (enum %s, %s)' % (name, enum, header))
    counts['enumerators'] = n_enum

    # ---- struct layout
    layout_lines = []
    n_layout = 0
    for row in layout:
        if row[0] != 'struct':
            continue
        _, header, struct, field, value = row
        if header not in shipped:
            continue
        n_layout += 1
        fields = struct_fields(all_text, struct)
        if fields is None:
            layout_lines.append('    ABI_MISSING("struct %s (%s)");' % (struct, header))
            report.append('missing struct: %s (%s)' % (struct, header))
        elif field == '(sizeof)':
            layout_lines.append('    ABI_SIZEOF(%s, %s);' % (struct, value))
        elif field in fields:
            layout_lines.append('    ABI_OFFSETOF(%s, %s, %s);' % (struct, field, value))
        else:
            layout_lines.append('    ABI_MISSING("field %s of struct %s (%s)");' % (field, struct, header))
            report.append('missing field: %s.%s (%s)' % (struct, field, header))
    counts['struct sizes and offsets'] = n_layout

    # ---- defines
    define_lines = []
    n_define = 0
    for row in layout:
        if row[0] != 'define':
            continue
        _, header, name, value = row
        if header not in shipped:
            continue
        n_define += 1
        if re.fullmatch(r'-?\d+', value):
            check = 'ABI_DEFINE_NUM(%s, %sLL);' % (name, value)
        else:
            check = 'ABI_DEFINE_STR(%s, %s);' % (name, c_string(value))
        define_lines.append('#ifdef %s\n    %s\n#else\n    ABI_MISSING("#define %s (%s)");\n#endif'
                            % (name, check, name, header))
    counts['defines'] = n_define

    # ---- type traits
    type_rows = []
    for row in layout:
        if row[0] != 'type' or row[1] not in shipped:
            continue
        _, _, name, tid, traits = row
        kv = dict(t.split('=') for t in traits.split())
        type_rows.append('    { %s, %s, %s, %s, %s },' % (tid, c_string(name), kv['blck_size'], kv['type_size'],
                                                        'true' if kv['is_quantized'] == '1' else 'false'))
    counts['types'] = len(type_rows)

    # ---- functions
    ours = {}
    for h in shipped:
        for name, proto in declared_functions(texts[h]).items():
            ours[name] = (h, proto)
    upstream_header = {r[2]: r[1] for r in functions}

    fn_decls, fn_entries = [], []
    n_unverified = 0
    for _, header, name in functions:
        if name not in ours:
            continue
        our_header, (our_ret, our_params) = ours[name]
        if our_header in NO_FUNCTION_CHECK_HEADERS:
            continue
        if our_header != header:
            report.append('header differs: %s is declared in %s, upstream in %s' % (name, our_header, header))
        var = 'abi_fn_' + name
        if name in signatures:
            _, ret, params = signatures[name]
            fn_decls.append(fn_pointer(name, ret, params, var))
            if normalize(ret) != normalize(our_ret) or param_types(params) != param_types(our_params):
                report.append('signature text differs (compiler decides): %s\n    upstream: %s (%s)\n    ours:     %s (%s)'
                              % (name, ret, params, our_ret, our_params))
        else:
            n_unverified += 1
            fn_decls.append('/* no upstream prototype on file: our own declaration, not verified */\n'
                            + fn_pointer(name, our_ret, our_params, var))
            report.append('unverified signature (no upstream prototype in tests/abi/signatures.tsv): %s' % name)
        fn_entries.append('    { %s, (abi_any_fn) %s },' % (c_string(name), var))
    for name, (h, _) in sorted(ours.items()):
        if name not in upstream_header and name.startswith('ggml_') and h in HEADERS:
            report.append('not an upstream function (extensions belong in ggmlx*.h): %s in %s' % (name, h))
    counts['functions'] = len(fn_entries)
    counts['functions without an upstream prototype'] = n_unverified

    includes = '\n'.join('#include "%s"' % h for h in shipped)
    src = TEMPLATE.format(
        headers=', '.join(shipped),
        includes=includes,
        enum_lines='\n'.join(enum_lines) or '    /* none */',
        layout_lines='\n'.join(layout_lines) or '    /* none */',
        define_lines='\n'.join(define_lines) or '    /* none */',
        type_rows='\n'.join(type_rows) or '    { -1, "", 0, 0, false },',
        n_types=len(type_rows),
        fn_decls='\n'.join(fn_decls),
        fn_entries='\n'.join(fn_entries) or '    { "", (abi_any_fn) 0 },',
        n_functions=len(fn_entries),
        counts=', '.join('%d %s' % (v, k) for k, v in counts.items()),
    )
    return src, counts, report


TEMPLATE = '''\
/*
 * test-abi.c -- upstream ggml's ABI, checked against our headers and library (docs/architecture.md §1).
 *
 * GENERATED by scripts/gen-abi-test.py from the tables in tests/abi/ -- do not edit; rerun the script.
 * Headers checked: {headers}.
 * Checks: {counts}.
 *
 * Every expected number is upstream's, read off its headers by a compiler. A function pointer
 * of upstream's exact type is initialised with each function we declare, so a signature that
 * differs is a compile error (C: incompatible pointer types under -Werror; C++: always).
 * The same file is compiled as C++17 by test-abi-cxx.cpp.
 */
#if defined(__GNUC__)
/* deprecated upstream functions (ggml_type_sizef ...) are part of the ABI we check */
#    pragma GCC diagnostic ignored "-Wdeprecated-declarations"
#endif

#include <criterion/criterion.h>

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

{includes}

#define ABI_MISSING(what) cr_expect(false, "%s: declared upstream, missing from our headers", what)

#define ABI_ENUM(name, value) \\
    cr_expect((long long) (name) == (long long) (value), "%s = %lld, upstream %lld", #name, \\
              (long long) (name), (long long) (value))

#define ABI_SIZEOF(type, value) \\
    cr_expect(sizeof(struct type) == (size_t) (value), "sizeof(struct %s) = %zu, upstream %zu", #type, \\
              sizeof(struct type), (size_t) (value))

#define ABI_OFFSETOF(type, field, value) \\
    cr_expect(offsetof(struct type, field) == (size_t) (value), "offsetof(struct %s, %s) = %zu, upstream %zu", \\
              #type, #field, offsetof(struct type, field), (size_t) (value))

#define ABI_DEFINE_NUM(name, value) \\
    cr_expect((long long) (name) == (value), "%s = %lld, upstream %lld", #name, (long long) (name), (value))

#define ABI_DEFINE_STR(name, value) \\
    cr_expect(strcmp(name, value) == 0, "%s = \\"%s\\", upstream \\"%s\\"", #name, name, value)

Test(abi, enum_values) {{
{enum_lines}
}}

Test(abi, struct_layout) {{
{layout_lines}
}}

Test(abi, defines) {{
{define_lines}
}}

struct abi_type_row {{
    int          id;
    const char * name;
    long long    blck_size;
    long long    type_size;
    bool         is_quantized;
}};

static const struct abi_type_row abi_types[{n_types}] = {{
{type_rows}
}};

/* removed and deprecated ids included: upstream still answers for them */
Test(abi, type_traits) {{
    for (size_t i = 0; i < sizeof(abi_types) / sizeof(abi_types[0]); i++) {{
        const struct abi_type_row * r = &abi_types[i];
        if (r->id < 0) {{
            continue;
        }}
        const enum ggml_type type = (enum ggml_type) r->id;
        const char * name = ggml_type_name(type);
        cr_expect(name != NULL && strcmp(name, r->name) == 0, "ggml_type_name(%d) = \\"%s\\", upstream \\"%s\\"",
                  r->id, name != NULL ? name : "(null)", r->name);
        cr_expect((long long) ggml_blck_size(type) == r->blck_size, "ggml_blck_size(%d) = %lld, upstream %lld",
                  r->id, (long long) ggml_blck_size(type), r->blck_size);
        cr_expect((long long) ggml_type_size(type) == r->type_size, "ggml_type_size(%d) = %lld, upstream %lld",
                  r->id, (long long) ggml_type_size(type), r->type_size);
        cr_expect(ggml_is_quantized(type) == r->is_quantized, "ggml_is_quantized(%d) = %d, upstream %d",
                  r->id, (int) ggml_is_quantized(type), (int) r->is_quantized);
    }}
}}

/* One pointer of upstream's exact type per function we declare. */
{fn_decls}

typedef void (*abi_any_fn)(void);

struct abi_fn_row {{
    const char * name;
    abi_any_fn   fn;
}};

static const struct abi_fn_row abi_functions[{n_functions}] = {{
{fn_entries}
}};

/* the real check is at compile time; this makes every pointer used and the count visible */
Test(abi, function_types) {{
    size_t n = 0;
    for (size_t i = 0; i < sizeof(abi_functions) / sizeof(abi_functions[0]); i++) {{
        if (abi_functions[i].name[0] == '\\0') {{
            continue;
        }}
        cr_expect(abi_functions[i].fn != NULL, "%s has no address", abi_functions[i].name);
        n++;
    }}
    cr_log_info("abi: %zu functions checked against upstream prototypes", n);
}}
'''


def main():
    ap = argparse.ArgumentParser(description=__doc__.split('\n')[0])
    ap.add_argument('--check', action='store_true', help='fail if tests/test-abi.c is out of date')
    args = ap.parse_args()
    src, counts, report = generate()
    for line in report:
        print('note: ' + line)
    print('checks: ' + ', '.join('%d %s' % (v, k) for k, v in counts.items()))
    if args.check:
        with open(OUT, encoding='utf-8') as f:
            if f.read() != src:
                print('tests/test-abi.c is out of date: run python3 scripts/gen-abi-test.py', file=sys.stderr)
                return 1
        return 0
    with open(OUT, 'w', encoding='utf-8') as f:
        f.write(src)
    print('wrote ' + os.path.relpath(OUT, ROOT))
    return 0


if __name__ == '__main__':
    sys.exit(main())
