/*
 * deflate.c: zlib's compressing calls, interposed.
 *
 * compress/compress2 of a whole buffer and the first deflate(Z_FINISH) of a
 * fresh stream with its whole input (default strategy, a 32 KiB window in
 * the zlib, gzip or raw format, nothing customised) become one
 * zlib-compress task; every other call is the real libz's. The one offload
 * path is zi_compress_into. docs/applications.md says how a stream lives.
 */
#include <stdlib.h>
#include <string.h>

#include "zlib_interposer.h"

/* zlib's messages for the errors deflate sets strm->msg for. */
static char zi_msg_stream_error[] = "stream error";
static char zi_msg_buffer_error[] = "buffer error";

/* Fails a deflate call as zlib's ERR_RETURN does: its message in strm->msg. */
static int zi_deflate_error(z_streamp strm, int code)
{
    strm->msg = code == Z_BUF_ERROR ? zi_msg_buffer_error : zi_msg_stream_error;
    return code;
}

/* The room for the compressed stream of in_len bytes. zlib's own bound
 * is not enough: the operator's deflater (zlib-rs) at level 1 codes
 * incompressible input with the fixed Huffman code, up to 9 bits a byte
 * (zlib-ng's bound, which it follows, allows for that). */
static size_t zi_compress_room(size_t in_len)
{
    return in_len + in_len / 8 + 512;
}

/* The check value a compressed stream ends with (zlib: Adler-32, big
 * endian; gzip: CRC-32, little endian, before the length): 1 with *check,
 * or 0 for raw deflate, which has none. */
static int zi_output_check(zi_format format, const zi_output *o, uLong *check)
{
    isola_out_piece p[2] = {{o->dest, o->dest_room}, {o->rest, o->rest_room}};
    size_t at;
    if (format == ZI_FORMAT_ZLIB && o->len >= 6) {
        at = o->len - 4;
        *check = ((uLong)zi_piece_byte(p, 2, at) << 24) | ((uLong)zi_piece_byte(p, 2, at + 1) << 16) |
                 ((uLong)zi_piece_byte(p, 2, at + 2) << 8) | (uLong)zi_piece_byte(p, 2, at + 3);
        return 1;
    }
    if (format == ZI_FORMAT_GZIP && o->len >= 18) {
        at = o->len - 8;
        *check = (uLong)zi_piece_byte(p, 2, at) | ((uLong)zi_piece_byte(p, 2, at + 1) << 8) |
                 ((uLong)zi_piece_byte(p, 2, at + 2) << 16) | ((uLong)zi_piece_byte(p, 2, at + 3) << 24);
        return 1;
    }
    return 0;
}

/* ---- one-shot calls ---- */

/* zlib's compress2: offloaded whole when the input is large enough and
 * the level valid; zlib's own answer for everything else, including an
 * output that does not fit (Z_BUF_ERROR from the real call). */
int compress2(Bytef *dest, uLongf *destLen, const Bytef *source, uLong sourceLen, int level)
{
    int r;
    int shaped = !zi_nested() && destLen != NULL && dest != NULL && *destLen > 0 &&
                 (source != NULL || sourceLen == 0) && level >= Z_DEFAULT_COMPRESSION && level <= 9;
    if (shaped && zi_worth_offloading(ZI_WORK_COMPRESS, sourceLen)) {
        zi_output o = {dest, *destLen, NULL, 0, 0};
        switch (zi_run_into(ZI_WORK_COMPRESS, ZI_FORMAT_ZLIB, level, source, sourceLen, &o, 0)) {
        case ZI_DONE:
            *destLen = (uLongf)o.len;
            return Z_OK;
        case ZI_FAIL:
            return ZI_FAIL_ONESHOT;
        default:
            break;
        }
    } else if (shaped) {
        zi_count_local(sourceLen);
    }
    ZI_CALL_REAL(r, compress2, dest, destLen, source, sourceLen, level);
    return r;
}

/* zlib's compress: compress2 at the default level. */
int compress(Bytef *dest, uLongf *destLen, const Bytef *source, uLong sourceLen)
{
    return compress2(dest, destLen, source, sourceLen, Z_DEFAULT_COMPRESSION);
}

/* zlib's compressBound (the real one: the offloaded output fits it too,
 * or the call is the real libz's). */
uLong compressBound(uLong sourceLen)
{
    return zi_real()->compressBound(sourceLen);
}

/* ---- streams ---- */

/* zlib's deflateInit_, recording the fresh stream. */
int deflateInit_(z_streamp strm, int level, const char *version, int stream_size)
{
    int outer = !zi_nested();
    int r;
    ZI_CALL_REAL(r, deflateInit_, strm, level, version, stream_size);
    if (r == Z_OK && outer)
        zi_stream_add(strm, ZI_DEFLATER, level, MAX_WBITS, 8, Z_DEFAULT_STRATEGY);
    return r;
}

/* zlib's deflateInit2_, recording the fresh stream and its parameters. */
int deflateInit2_(z_streamp strm, int level, int method, int windowBits, int memLevel,
                  int strategy, const char *version, int stream_size)
{
    int outer = !zi_nested();
    int r;
    ZI_CALL_REAL(r, deflateInit2_, strm, level, method, windowBits, memLevel, strategy, version,
                 stream_size);
    if (r == Z_OK && outer)
        zi_stream_add(strm, ZI_DEFLATER, level, windowBits, memLevel, strategy);
    return r;
}

/* The real deflate. */
static int zi_deflate_real(z_streamp strm, int flush)
{
    int r;
    ZI_CALL_REAL(r, deflate, strm, flush);
    return r;
}

/* Offloads a fresh stream's first deflate(Z_FINISH): 1 with *ret if the
 * call is answered (done, or failed under ISOLA_FALLBACK=error), 0 if the
 * real deflate must run it (the real state is still untouched). */
static int zi_deflate_offload(z_streamp strm, zi_stream *s, zi_format format, int *ret)
{
    size_t in_len = strm->avail_in;
    uLong bound;
    zi_output o = {strm->next_out, strm->avail_out, NULL, 0, 0};
    ZI_CALL_REAL(bound, deflateBound, strm, (uLong)in_len);
    if (o.dest_room < bound) {
        /* zlib would not finish in this call either: room for the rest */
        size_t room = zi_compress_room(in_len);
        o.rest_room = room > o.dest_room ? room - o.dest_room : 0;
    }
    /* else zlib promises Z_STREAM_END now: an output that does not fit is
     * left to the real deflate (ZI_TOO_LARGE) */
    switch (zi_run_into(ZI_WORK_COMPRESS, format, s->level, strm->next_in, in_len, &o, 0)) {
    case ZI_DONE: {
        size_t first = o.len < o.dest_room ? o.len : o.dest_room;
        uLong check = 0;
        int has_check = zi_output_check(format, &o, &check);
        zi_stream_take_over(strm, s, in_len, first, o.rest, o.len - first, check, has_check);
        *ret = s->phase == ZI_ENDED ? Z_STREAM_END : Z_OK;
        return 1;
    }
    case ZI_FAIL:
        strm->msg = zi_fail_message;
        *ret = ZI_FAIL_STREAM;
        return 1;
    default:
        return 0;
    }
}

/* A fresh stream's first deflate call: offloaded when it is the whole
 * input with Z_FINISH; otherwise the stream is the real libz's from now. */
static int zi_deflate_first(z_streamp strm, zi_stream *s, int flush)
{
    zi_format format = zi_format_of(s->window_bits, 0);
    int r;
    /* calls zlib refuses without touching the stream leave it fresh */
    if (strm->next_out == NULL || strm->avail_out == 0 ||
        (strm->avail_in != 0 && strm->next_in == NULL) || flush < 0 || flush > Z_BLOCK)
        return zi_deflate_real(strm, flush);
    if (flush == Z_FINISH && !s->customised && s->strategy == Z_DEFAULT_STRATEGY &&
        format != ZI_FORMAT_NONE && strm->total_in == 0 &&
        zi_worth_offloading(ZI_WORK_COMPRESS, strm->avail_in)) {
        if (zi_deflate_offload(strm, s, format, &r))
            return r;
    } else {
        zi_count_local(strm->avail_in);
    }
    s->phase = ZI_FORWARDED;
    return zi_deflate_real(strm, flush);
}

/* deflate on an offloaded stream: hands out the rest of its output, then
 * answers as zlib answers a finished stream. */
static int zi_deflate_continue(z_streamp strm, zi_stream *s, int flush)
{
    if (strm->next_out == NULL || (strm->avail_in != 0 && strm->next_in == NULL) ||
        flush != Z_FINISH)
        return zi_deflate_error(strm, Z_STREAM_ERROR);
    if (strm->avail_out == 0)
        return zi_deflate_error(strm, Z_BUF_ERROR);
    if (s->phase == ZI_ENDED)
        return strm->avail_in != 0 ? zi_deflate_error(strm, Z_BUF_ERROR) : Z_STREAM_END;
    zi_stream_hand_out(strm, s);
    return s->phase == ZI_ENDED ? Z_STREAM_END : Z_OK;
}

/* zlib's deflate. */
int deflate(z_streamp strm, int flush)
{
    zi_stream *s = zi_nested() ? NULL : zi_stream_find(strm, ZI_DEFLATER);
    if (s != NULL) {
        switch (s->phase) {
        case ZI_FRESH:
            return zi_deflate_first(strm, s, flush);
        case ZI_HANDING_OUT:
        case ZI_ENDED:
            return zi_deflate_continue(strm, s, flush);
        case ZI_FORWARDED:
            break;
        }
    }
    return zi_deflate_real(strm, flush);
}

/* zlib's deflateEnd, forgetting the stream. Discarding an offloaded
 * stream's output before its input was all reported consumed is zlib's
 * Z_DATA_ERROR (a stream freed while busy). */
int deflateEnd(z_streamp strm)
{
    zi_stream *s = zi_nested() ? NULL : zi_stream_find(strm, ZI_DEFLATER);
    int busy = s != NULL && s->phase == ZI_HANDING_OUT && s->in_given < s->in_len;
    int r;
    ZI_CALL_REAL(r, deflateEnd, strm);
    zi_stream_remove(strm);
    return r == Z_OK && busy ? Z_DATA_ERROR : r;
}

/* Makes a stream fresh again after a successful reset. */
static int zi_deflate_after_reset(z_streamp strm, int outer, int r)
{
    zi_stream *s = outer && r == Z_OK ? zi_stream_find(strm, ZI_DEFLATER) : NULL;
    if (s != NULL)
        zi_stream_restart(s);
    return r;
}

/* zlib's deflateReset. */
int deflateReset(z_streamp strm)
{
    int outer = !zi_nested();
    int r;
    ZI_CALL_REAL(r, deflateReset, strm);
    return zi_deflate_after_reset(strm, outer, r);
}

/* zlib's deflateResetKeep. */
int deflateResetKeep(z_streamp strm)
{
    int outer = !zi_nested();
    int r;
    ZI_CALL_REAL(r, deflateResetKeep, strm);
    return zi_deflate_after_reset(strm, outer, r);
}

/* The record of strm if the interposer answers for it (offloaded). */
static zi_stream *zi_deflate_taken_over(const z_stream *strm)
{
    zi_stream *s = zi_nested() ? NULL : zi_stream_find(strm, ZI_DEFLATER);
    return s != NULL && (s->phase == ZI_HANDING_OUT || s->phase == ZI_ENDED) ? s : NULL;
}

/* The record of strm if it is fresh. */
static zi_stream *zi_deflate_fresh(const z_stream *strm)
{
    zi_stream *s = zi_nested() ? NULL : zi_stream_find(strm, ZI_DEFLATER);
    return s != NULL && s->phase == ZI_FRESH ? s : NULL;
}

/* zlib's compression functions by level: stored (0), fast (1-3), slow (4-9). */
static int zi_level_family(int level)
{
    return level == 0 ? 0 : level <= 3 ? 1 : 2;
}

/* zlib's deflateParams. On a fresh stream it only sets the parameters
 * (recorded). On an offloaded one, a change that zlib would have to
 * compress with fails as zlib fails it: Z_BUF_ERROR while output waits,
 * Z_STREAM_ERROR once finished. */
int deflateParams(z_streamp strm, int level, int strategy)
{
    zi_stream *s = zi_deflate_taken_over(strm);
    int norm = level == Z_DEFAULT_COMPRESSION ? 6 : level;
    int r;
    if (s != NULL) {
        if (norm < 0 || norm > 9 || strategy < 0 || strategy > Z_FIXED)
            return Z_STREAM_ERROR;
        if (strategy != s->strategy || zi_level_family(norm) != zi_level_family(s->level))
            return s->phase == ZI_ENDED ? Z_STREAM_ERROR : Z_BUF_ERROR;
    } else {
        s = zi_deflate_fresh(strm);
    }
    ZI_CALL_REAL(r, deflateParams, strm, level, strategy);
    if (s != NULL && r == Z_OK) {
        s->level = norm;
        s->strategy = strategy;
    }
    return r;
}

/* Marks a fresh stream customised when a setup call succeeded. */
static int zi_deflate_customised(zi_stream *fresh, int r)
{
    if (fresh != NULL && r == Z_OK)
        fresh->customised = 1;
    return r;
}

/* zlib's deflateSetDictionary: a stream with a dictionary is the real
 * libz's; an offloaded one has started, and zlib refuses it then. */
int deflateSetDictionary(z_streamp strm, const Bytef *dictionary, uInt dictLength)
{
    zi_stream *fresh = zi_deflate_fresh(strm);
    int r;
    if (zi_deflate_taken_over(strm) != NULL)
        return Z_STREAM_ERROR;
    ZI_CALL_REAL(r, deflateSetDictionary, strm, dictionary, dictLength);
    return zi_deflate_customised(fresh, r);
}

/* zlib's deflatePrime: as deflateSetDictionary. */
int deflatePrime(z_streamp strm, int bits, int value)
{
    zi_stream *fresh = zi_deflate_fresh(strm);
    int r;
    if (zi_deflate_taken_over(strm) != NULL)
        return Z_STREAM_ERROR;
    ZI_CALL_REAL(r, deflatePrime, strm, bits, value);
    return zi_deflate_customised(fresh, r);
}

/* zlib's deflateSetHeader: a stream with a gzip header of its own is the
 * real libz's (on an offloaded one, as in zlib, it is too late to matter). */
int deflateSetHeader(z_streamp strm, gz_headerp head)
{
    zi_stream *fresh = zi_deflate_fresh(strm);
    int r;
    ZI_CALL_REAL(r, deflateSetHeader, strm, head);
    return zi_deflate_customised(fresh, r);
}

/* zlib's deflateTune: a tuned stream is the real libz's. */
int deflateTune(z_streamp strm, int good_length, int max_lazy, int nice_length, int max_chain)
{
    zi_stream *fresh = zi_deflate_fresh(strm);
    int r;
    ZI_CALL_REAL(r, deflateTune, strm, good_length, max_lazy, nice_length, max_chain);
    return zi_deflate_customised(fresh, r);
}

/* zlib's deflatePending: an offloaded stream's waiting output counts. */
int deflatePending(z_streamp strm, unsigned *pending, int *bits)
{
    zi_stream *s = zi_deflate_taken_over(strm);
    int r;
    if (s != NULL) {
        if (pending != NULL)
            *pending = (unsigned)(s->rest_len - s->rest_pos);
        if (bits != NULL)
            *bits = 0;
        return Z_OK;
    }
    ZI_CALL_REAL(r, deflatePending, strm, pending, bits);
    return r;
}

/* zlib's deflateCopy: the copy carries the side state (and any waiting
 * output) with it. */
int deflateCopy(z_streamp dest, z_streamp source)
{
    zi_stream *s = zi_nested() ? NULL : zi_stream_find(source, ZI_DEFLATER);
    int r;
    ZI_CALL_REAL(r, deflateCopy, dest, source);
    if (r != Z_OK || zi_nested())
        return r;
    if (s == NULL) {
        zi_stream_remove(dest);
    } else if (zi_stream_copy(dest, s) != 0) {
        ZI_CALL_REAL(r, deflateEnd, dest);
        return Z_MEM_ERROR;
    }
    return Z_OK;
}
