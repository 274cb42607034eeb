/*
 * gguf.h -- GGUF model files: reading, inspecting, editing and writing them.
 * Compatible with upstream ggml's gguf.h (2026-08-21): the same 61 functions, enum values,
 * constants and struct gguf_init_params layout.
 *
 * A GGUF file, in order (all integers little-endian, no padding between fields):
 *   1. the magic "GGUF" (4 bytes) and the version (uint32_t, 2 or 3 accepted, 3 written);
 *   2. the tensor count and the key/value count (int64_t each);
 *   3. the key/value pairs: key (string), value type (int32_t gguf_type), value; an array value is
 *      the element type (int32_t), the element count (uint64_t) and the elements back to back;
 *   4. the tensor infos: name (string), n_dims (uint32_t), ne[n_dims] (int64_t each), type
 *      (int32_t ggml_type), offset in the data section (uint64_t);
 *   5. zero padding up to a multiple of the alignment ("general.alignment", uint32_t, default
 *      GGUF_DEFAULT_ALIGNMENT), then the data section: every tensor at its offset, padded too.
 * A string is its length (uint64_t) followed by its bytes, without a terminating NUL. A bool is
 * one byte.
 *
 * Where ggmlx differs from upstream (docs/errors.md): a file is untrusted input. The readers check
 * every count, length, type, shape and offset against the bytes really there and against overflow
 * before they allocate or read, and refuse a little more than upstream (keys and tensor names that
 * are not UTF-8 or hold a NUL byte; tensors outside the input even when their data is not read):
 * docs/gguf.md lists every rule. Nothing here aborts the process: where upstream asserts (a wrong
 * type for a getter, a key id out of range, a duplicate tensor name), the function returns NULL,
 * 0, -1, false or does nothing, and the reason, naming the field and, when reading, the byte
 * offset in the file, is logged and kept in ggmlx_last_error() (include/ggmlx.h).
 */
#pragma once

#include "ggml.h"

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#define GGUF_MAGIC   "GGUF"
#define GGUF_VERSION 3

#define GGUF_KEY_GENERAL_ALIGNMENT "general.alignment"

#define GGUF_DEFAULT_ALIGNMENT 32

#ifdef __cplusplus
extern "C" {
#endif

    /* The types a value can have; an array's elements have one of the others (never ARRAY). */
    enum gguf_type {
        GGUF_TYPE_UINT8   = 0,
        GGUF_TYPE_INT8    = 1,
        GGUF_TYPE_UINT16  = 2,
        GGUF_TYPE_INT16   = 3,
        GGUF_TYPE_UINT32  = 4,
        GGUF_TYPE_INT32   = 5,
        GGUF_TYPE_FLOAT32 = 6,
        GGUF_TYPE_BOOL    = 7,
        GGUF_TYPE_STRING  = 8,
        GGUF_TYPE_ARRAY   = 9,
        GGUF_TYPE_UINT64  = 10,
        GGUF_TYPE_INT64   = 11,
        GGUF_TYPE_FLOAT64 = 12,
        GGUF_TYPE_COUNT,
    };

    struct gguf_context;

    struct gguf_init_params {
        /* with ctx: true creates the tensors without data, false also reads the data section */
        bool no_alloc;

        /*
         * When not NULL, *ctx receives a new ggml context holding one tensor per tensor info
         * (named, shaped and typed as in the file). With no_alloc false it also holds a tensor
         * named "GGUF tensor data binary blob" with the whole data section, and every tensor's
         * data points into it. The caller frees it with ggml_free; on failure *ctx is NULL.
         */
        struct ggml_context ** ctx;
    };

    /*
     * Reads len bytes at offset (counted from where reading started) into output; returns how
     * many it read. Fewer than len means the end of the input.
     */
    typedef size_t (*gguf_reader_callback_t)(void * userdata, void * output, uint64_t offset, size_t len);

    /* A new context with no keys and no tensors: version 3, alignment GGUF_DEFAULT_ALIGNMENT. */
    GGML_API struct gguf_context * gguf_init_empty(void);

    /* Reads from file's current position to its end; the file stays open. */
    GGML_API struct gguf_context * gguf_init_from_file_ptr(FILE * file, struct gguf_init_params params);
    GGML_API struct gguf_context * gguf_init_from_file(const char * fname, struct gguf_init_params params);

    /* Reads size bytes at data; the data section is copied when params asks for it. */
    GGML_API struct gguf_context * gguf_init_from_buffer(const void * data, size_t size, struct gguf_init_params params);

    /*
     * Reads through callback, at most max_chunk_read bytes a call (0: no limit), and never more
     * than max_expected_size bytes in all: that is the input's size as far as the checks go.
     */
    GGML_API struct gguf_context * gguf_init_from_callback(gguf_reader_callback_t callback, void * userdata,
                                                           size_t max_chunk_read, uint64_t max_expected_size,
                                                           struct gguf_init_params params);

    /* NULL is ignored. The ggml context made by a reader is the caller's and is not freed here. */
    GGML_API void gguf_free(struct gguf_context * ctx);

    /* "u8", "i8", ..., "str", "arr"; NULL for an unknown type. */
    GGML_API const char * gguf_type_name(enum gguf_type type);

    GGML_API uint32_t gguf_get_version    (const struct gguf_context * ctx);
    GGML_API size_t   gguf_get_alignment  (const struct gguf_context * ctx);
    /* where the data section starts, counted from where reading started (0 for a new context) */
    GGML_API size_t   gguf_get_data_offset(const struct gguf_context * ctx);

    /*
     * Key/value pairs, by id in 0 .. gguf_get_n_kv()-1 (file order; a pair set again moves to the
     * back). A bad id gives NULL / 0 / -1 with an error, where upstream aborts.
     */
    GGML_API int64_t      gguf_get_n_kv(const struct gguf_context * ctx);
    /* -1 when there is no such key (not an error) */
    GGML_API int64_t      gguf_find_key(const struct gguf_context * ctx, const char * key);
    GGML_API const char * gguf_get_key (const struct gguf_context * ctx, int64_t key_id);

    /* GGUF_TYPE_ARRAY for an array; -1 (as enum gguf_type) for a bad id */
    GGML_API enum gguf_type gguf_get_kv_type (const struct gguf_context * ctx, int64_t key_id);
    /* an array's element type; -1 (as enum gguf_type) when key_id is not an array */
    GGML_API enum gguf_type gguf_get_arr_type(const struct gguf_context * ctx, int64_t key_id);

    /*
     * A single value of exactly the type asked for (no conversion). The wrong type, an array of
     * more than one element or a bad id give 0 / false / NULL with an error (upstream aborts).
     */
    GGML_API uint8_t      gguf_get_val_u8  (const struct gguf_context * ctx, int64_t key_id);
    GGML_API int8_t       gguf_get_val_i8  (const struct gguf_context * ctx, int64_t key_id);
    GGML_API uint16_t     gguf_get_val_u16 (const struct gguf_context * ctx, int64_t key_id);
    GGML_API int16_t      gguf_get_val_i16 (const struct gguf_context * ctx, int64_t key_id);
    GGML_API uint32_t     gguf_get_val_u32 (const struct gguf_context * ctx, int64_t key_id);
    GGML_API int32_t      gguf_get_val_i32 (const struct gguf_context * ctx, int64_t key_id);
    GGML_API float        gguf_get_val_f32 (const struct gguf_context * ctx, int64_t key_id);
    GGML_API uint64_t     gguf_get_val_u64 (const struct gguf_context * ctx, int64_t key_id);
    GGML_API int64_t      gguf_get_val_i64 (const struct gguf_context * ctx, int64_t key_id);
    GGML_API double       gguf_get_val_f64 (const struct gguf_context * ctx, int64_t key_id);
    GGML_API bool         gguf_get_val_bool(const struct gguf_context * ctx, int64_t key_id);
    /* NUL-terminated; valid until the pair is changed or the context freed */
    GGML_API const char * gguf_get_val_str (const struct gguf_context * ctx, int64_t key_id);
    /* the raw bytes of a single non-string value */
    GGML_API const void * gguf_get_val_data(const struct gguf_context * ctx, int64_t key_id);
    /* the element count of an array (1 for a single value) */
    GGML_API size_t       gguf_get_arr_n   (const struct gguf_context * ctx, int64_t key_id);

    /*
     * The first element of a non-string array (or the single value). Bools are stored one byte
     * each (int8_t), whatever sizeof(bool) is.
     */
    GGML_API const void * gguf_get_arr_data(const struct gguf_context * ctx, int64_t key_id);

    /* the i-th string of a string array; i is checked (upstream does not) */
    GGML_API const char * gguf_get_arr_str (const struct gguf_context * ctx, int64_t key_id, size_t i);

    /* Tensor infos, by id in 0 .. gguf_get_n_tensors()-1; a bad id gives NULL / 0 / -1 with an error. */
    GGML_API int64_t        gguf_get_n_tensors    (const struct gguf_context * ctx);
    /* -1 when there is no such tensor (not an error) */
    GGML_API int64_t        gguf_find_tensor      (const struct gguf_context * ctx, const char * name);
    /* relative to the data section */
    GGML_API size_t         gguf_get_tensor_offset(const struct gguf_context * ctx, int64_t tensor_id);
    GGML_API const char *   gguf_get_tensor_name  (const struct gguf_context * ctx, int64_t tensor_id);
    /* GGML_MAX_DIMS sizes; those beyond the tensor's dimensions are 1 */
    GGML_API const int64_t * gguf_get_tensor_ne   (const struct gguf_context * ctx, int64_t tensor_id);
    GGML_API enum ggml_type gguf_get_tensor_type  (const struct gguf_context * ctx, int64_t tensor_id);
    /* bytes of data, without padding */
    GGML_API size_t         gguf_get_tensor_size  (const struct gguf_context * ctx, int64_t tensor_id);

    /* Removes key if present; returns the id it had (later ids move down by one), else -1. */
    GGML_API int64_t gguf_remove_key(struct gguf_context * ctx, const char * key);

    /*
     * Set a value: an existing pair of that key is removed and the new one goes to the back.
     * GGUF_KEY_GENERAL_ALIGNMENT only takes a u32 power of two; anything else is refused with an
     * error (upstream aborts) and the context is left unchanged, as it is when memory runs out.
     */
    GGML_API void gguf_set_val_u8  (struct gguf_context * ctx, const char * key, uint8_t      val);
    GGML_API void gguf_set_val_i8  (struct gguf_context * ctx, const char * key, int8_t       val);
    GGML_API void gguf_set_val_u16 (struct gguf_context * ctx, const char * key, uint16_t     val);
    GGML_API void gguf_set_val_i16 (struct gguf_context * ctx, const char * key, int16_t      val);
    GGML_API void gguf_set_val_u32 (struct gguf_context * ctx, const char * key, uint32_t     val);
    GGML_API void gguf_set_val_i32 (struct gguf_context * ctx, const char * key, int32_t      val);
    GGML_API void gguf_set_val_f32 (struct gguf_context * ctx, const char * key, float        val);
    GGML_API void gguf_set_val_u64 (struct gguf_context * ctx, const char * key, uint64_t     val);
    GGML_API void gguf_set_val_i64 (struct gguf_context * ctx, const char * key, int64_t      val);
    GGML_API void gguf_set_val_f64 (struct gguf_context * ctx, const char * key, double       val);
    GGML_API void gguf_set_val_bool(struct gguf_context * ctx, const char * key, bool         val);
    GGML_API void gguf_set_val_str (struct gguf_context * ctx, const char * key, const char * val);

    /* An array of n elements of type (not STRING or ARRAY), copied from data. */
    GGML_API void gguf_set_arr_data(struct gguf_context * ctx, const char * key, enum gguf_type type, const void * data, size_t n);

    /* An array of n strings, copied from data. */
    GGML_API void gguf_set_arr_str (struct gguf_context * ctx, const char * key, const char ** data, size_t n);

    /* Sets every pair of src in ctx, in src's order. */
    GGML_API void gguf_set_kv(struct gguf_context * ctx, const struct gguf_context * src);

    /*
     * Adds a tensor info copied from tensor (name, type, shape, and its data pointer or backend
     * buffer, which the writer reads). The name must be new to ctx. Its offset follows the
     * previous tensor's data, padded to the alignment.
     */
    GGML_API void gguf_add_tensor(struct gguf_context * ctx, const struct ggml_tensor * tensor);

    /* Changes a tensor's type; the offsets of the tensors after it are laid out again. */
    GGML_API void gguf_set_tensor_type(struct gguf_context * ctx, const char * name, enum ggml_type type);

    /* Where the writer reads the tensor's data: gguf_get_tensor_size bytes, not copied. */
    GGML_API void gguf_set_tensor_data(struct gguf_context * ctx, const char * name, const void * data);

    /*
     * Writing. The whole file at once with gguf_write_to_file(ctx, fname, false); or the metadata
     * only (only_meta true, or gguf_get_meta_size/gguf_get_meta_data into a buffer), with the
     * data appended or written first after a gap of gguf_get_meta_size bytes.
     * false on an I/O error or a tensor without data, with an error recorded.
     */
    GGML_API bool gguf_write_to_file_ptr(const struct gguf_context * ctx, FILE * file, bool only_meta);
    GGML_API bool gguf_write_to_file(const struct gguf_context * ctx, const char * fname, bool only_meta);

    /* bytes of the header, key/values and tensor infos, with the padding after them (0 on error) */
    GGML_API size_t gguf_get_meta_size(const struct gguf_context * ctx);

    /* Writes those bytes to data, which must hold gguf_get_meta_size(ctx) bytes. */
    GGML_API void   gguf_get_meta_data(const struct gguf_context * ctx, void * data);

#ifdef __cplusplus
}
#endif
