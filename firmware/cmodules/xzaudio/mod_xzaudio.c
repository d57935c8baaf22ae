/* MicroPython binding of the xzaudio C module: thin wrappers, all logic is
 * in core/ (portable, host-tested) and esp32/ (ESP-IDF glue).
 *
 *   Encoder(rate, frame_ms=60).encode(pcm, out) -> bytes written
 *   Decoder(rate).decode(packet_or_None, out)   -> bytes written
 *   start(mclk=, bclk=, ws=, dout=, din=, rate=24000)   (XZ_HAVE_IO builds)
 *   AudioIn(rate=16000, frame_ms=60)   pollable: readinto(buf) -> one packet
 *   AudioOut(rate=24000)               pollable: write(packet) -> len or None
 *   Mp3Player()                        pollable: readinto(buf) -> event byte
 *
 * Compiled only inside a MicroPython build (USER_C_MODULES); with
 * XZ_HAVE_IO=1 the libopus calls run on the engine's codec task (its large
 * stack on the board) and the I/O objects exist: the ESP32 port with the
 * board engine (micropython.cmake), the unix port with the host engine
 * (micropython.mk, host/). Builds without it get Encoder/Decoder only,
 * run in place.
 */
#include <string.h>

#include "py/mperrno.h"
#include "py/runtime.h"
#include "py/stream.h"

#include "xz_opus.h"

#ifndef XZ_HAVE_IO
#define XZ_HAVE_IO 0
#endif

#if XZ_HAVE_IO
#include "mod_xzaudio_io.h"
#include "xz_engine.h"
#include "xz_speech.h"
#endif

/* ---- running libopus where the stack is large enough ---- */

typedef struct {
    int kind; /* 0 enc init, 1 encode, 2 dec init, 3 decode */
    void *st;
    const void *in;
    uint32_t in_len, a, b;
    void *out;
    uint32_t cap;
    int rc;
} op_t;

static void run_op(void *arg) {
    op_t *o = arg;
    switch (o->kind) {
    case 0: o->rc = xz_enc_init(o->st, o->a, o->b); break;
    case 1: o->rc = xz_enc_encode(o->st, o->in, o->in_len, o->out, o->cap); break;
    case 2: o->rc = xz_dec_init(o->st, o->a); break;
    default: o->rc = xz_dec_decode(o->st, o->in, o->in_len, o->out, o->cap); break;
    }
}

static int do_op(op_t *o) {
#if XZ_HAVE_IO
    xz_need_engine();
    /* Let other MicroPython threads run while the codec task works. */
    MP_THREAD_GIL_EXIT();
    xz_engine_call(run_op, o);
    MP_THREAD_GIL_ENTER();
#else
    run_op(o);
#endif
    return o->rc;
}

static NORETURN void raise_codec(int rc) {
    mp_raise_msg_varg(&mp_type_ValueError, MP_ERROR_TEXT("opus error %d"), rc);
}

/* ---- Encoder ---- */

typedef struct {
    mp_obj_base_t base;
    void *st;
    uint32_t frame_samples;
} encoder_obj_t;

static mp_obj_t encoder_make_new(const mp_obj_type_t *type, size_t n_args, size_t n_kw, const mp_obj_t *args) {
    op_t op = {0};
    encoder_obj_t *self;
    mp_arg_check_num(n_args, n_kw, 1, 2, false);
    self = mp_obj_malloc(encoder_obj_t, type);
    /* On the GC heap (PSRAM on the board); freed with the object. */
    self->st = m_malloc(xz_enc_size());
    op.kind = 0;
    op.st = self->st;
    op.a = (uint32_t)mp_obj_get_int(args[0]);
    op.b = n_args > 1 ? (uint32_t)mp_obj_get_int(args[1]) : 60;
    if (do_op(&op) != 0) {
        raise_codec(op.rc);
    }
    self->frame_samples = op.a / 1000u * op.b;
    return MP_OBJ_FROM_PTR(self);
}

static mp_obj_t encoder_encode(mp_obj_t self_in, mp_obj_t pcm_in, mp_obj_t out_in) {
    encoder_obj_t *self = MP_OBJ_TO_PTR(self_in);
    mp_buffer_info_t pcm, out;
    op_t op = {0};
    mp_get_buffer_raise(pcm_in, &pcm, MP_BUFFER_READ);
    mp_get_buffer_raise(out_in, &out, MP_BUFFER_WRITE);
    if (pcm.len != self->frame_samples * 2u) {
        mp_raise_ValueError(MP_ERROR_TEXT("pcm must be exactly one frame"));
    }
    op.kind = 1;
    op.st = self->st;
    op.in = pcm.buf;
    op.in_len = self->frame_samples;
    op.out = out.buf;
    op.cap = (uint32_t)out.len;
    if (do_op(&op) < 0) {
        raise_codec(op.rc);
    }
    return MP_OBJ_NEW_SMALL_INT(op.rc);
}
static MP_DEFINE_CONST_FUN_OBJ_3(encoder_encode_obj, encoder_encode);

static const mp_rom_map_elem_t encoder_locals_table[] = {
    {MP_ROM_QSTR(MP_QSTR_encode), MP_ROM_PTR(&encoder_encode_obj)},
};
static MP_DEFINE_CONST_DICT(encoder_locals, encoder_locals_table);

MP_DEFINE_CONST_OBJ_TYPE(xz_encoder_type, MP_QSTR_Encoder, MP_TYPE_FLAG_NONE,
                         make_new, encoder_make_new, locals_dict, &encoder_locals);

/* ---- Decoder ---- */

typedef struct {
    mp_obj_base_t base;
    void *st;
} decoder_obj_t;

static mp_obj_t decoder_make_new(const mp_obj_type_t *type, size_t n_args, size_t n_kw, const mp_obj_t *args) {
    op_t op = {0};
    decoder_obj_t *self;
    mp_arg_check_num(n_args, n_kw, 1, 1, false);
    self = mp_obj_malloc(decoder_obj_t, type);
    self->st = m_malloc(xz_dec_size());
    op.kind = 2;
    op.st = self->st;
    op.a = (uint32_t)mp_obj_get_int(args[0]);
    if (do_op(&op) != 0) {
        raise_codec(op.rc);
    }
    return MP_OBJ_FROM_PTR(self);
}

static mp_obj_t decoder_decode(mp_obj_t self_in, mp_obj_t pkt_in, mp_obj_t out_in) {
    decoder_obj_t *self = MP_OBJ_TO_PTR(self_in);
    mp_buffer_info_t pkt = {0}, out;
    op_t op = {0};
    if (pkt_in != mp_const_none) {
        mp_get_buffer_raise(pkt_in, &pkt, MP_BUFFER_READ);
    }
    mp_get_buffer_raise(out_in, &out, MP_BUFFER_WRITE);
    op.kind = 3;
    op.st = self->st;
    op.in = pkt.len ? pkt.buf : NULL;
    op.in_len = (uint32_t)pkt.len;
    op.out = out.buf;
    op.cap = (uint32_t)(out.len / 2);
    if (do_op(&op) < 0) {
        raise_codec(op.rc);
    }
    return MP_OBJ_NEW_SMALL_INT(op.rc * 2);
}
static MP_DEFINE_CONST_FUN_OBJ_3(decoder_decode_obj, decoder_decode);

static const mp_rom_map_elem_t decoder_locals_table[] = {
    {MP_ROM_QSTR(MP_QSTR_decode), MP_ROM_PTR(&decoder_decode_obj)},
};
static MP_DEFINE_CONST_DICT(decoder_locals, decoder_locals_table);

MP_DEFINE_CONST_OBJ_TYPE(xz_decoder_type, MP_QSTR_Decoder, MP_TYPE_FLAG_NONE,
                         make_new, decoder_make_new, locals_dict, &decoder_locals);

/* ---- module ---- */

static const mp_rom_map_elem_t xzaudio_globals_table[] = {
    {MP_ROM_QSTR(MP_QSTR___name__), MP_ROM_QSTR(MP_QSTR_xzaudio)},
    {MP_ROM_QSTR(MP_QSTR_Encoder), MP_ROM_PTR(&xz_encoder_type)},
    {MP_ROM_QSTR(MP_QSTR_Decoder), MP_ROM_PTR(&xz_decoder_type)},
    {MP_ROM_QSTR(MP_QSTR_MAX_PACKET), MP_ROM_INT(XZ_OPUS_MAX_PACKET)},
#if XZ_HAVE_IO
    {MP_ROM_QSTR(MP_QSTR_start), MP_ROM_PTR(&xz_start_obj)},
    {MP_ROM_QSTR(MP_QSTR_running), MP_ROM_PTR(&xz_running_obj)},
    {MP_ROM_QSTR(MP_QSTR_MODE_DUPLEX), MP_ROM_INT(XZ_MODE_DUPLEX)},
    {MP_ROM_QSTR(MP_QSTR_MODE_TDM), MP_ROM_INT(XZ_MODE_TDM)},
    {MP_ROM_QSTR(MP_QSTR_MODE_SIMPLEX), MP_ROM_INT(XZ_MODE_SIMPLEX)},
    {MP_ROM_QSTR(MP_QSTR_AudioIn), MP_ROM_PTR(&xz_audioin_type)},
    {MP_ROM_QSTR(MP_QSTR_AudioOut), MP_ROM_PTR(&xz_audioout_type)},
    {MP_ROM_QSTR(MP_QSTR_Mp3Player), MP_ROM_PTR(&xz_mp3player_type)},
    {MP_ROM_QSTR(MP_QSTR_MP3_END), MP_ROM_INT(XZ_MP3_EV_END)},
    {MP_ROM_QSTR(MP_QSTR_MP3_STOPPED), MP_ROM_INT(XZ_MP3_EV_STOPPED)},
    {MP_ROM_QSTR(MP_QSTR_MP3_ERROR), MP_ROM_INT(XZ_MP3_EV_ERROR)},
    {MP_ROM_QSTR(MP_QSTR_MP3_CHUNK), MP_ROM_INT(XZ_MP3_CHUNK)},
    {MP_ROM_QSTR(MP_QSTR_IDLE), MP_ROM_INT(XZ_MP3_IDLE)},
    {MP_ROM_QSTR(MP_QSTR_PLAYING), MP_ROM_INT(XZ_MP3_PLAYING)},
    {MP_ROM_QSTR(MP_QSTR_PAUSED), MP_ROM_INT(XZ_MP3_PAUSED)},
    {MP_ROM_QSTR(MP_QSTR_Speech), MP_ROM_PTR(&xz_speech_type)},
    {MP_ROM_QSTR(MP_QSTR_WAKE), MP_ROM_INT(XZ_SPEECH_WAKE)},
    {MP_ROM_QSTR(MP_QSTR_PHRASE), MP_ROM_INT(XZ_SPEECH_PHRASE)},
#endif
};
static MP_DEFINE_CONST_DICT(xzaudio_globals, xzaudio_globals_table);

const mp_obj_module_t xzaudio_user_cmodule = {
    .base = {&mp_type_module},
    .globals = (mp_obj_dict_t *)&xzaudio_globals,
};

MP_REGISTER_MODULE(MP_QSTR_xzaudio, xzaudio_user_cmodule);
