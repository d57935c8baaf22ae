/* The I/O objects of the xzaudio module (mod_xzaudio_io.c, XZ_HAVE_IO). */
#ifndef MOD_XZAUDIO_IO_H
#define MOD_XZAUDIO_IO_H

#include "py/obj.h"

void xz_need_engine(void);
extern const mp_obj_fun_builtin_var_t xz_start_obj;
extern const mp_obj_fun_builtin_fixed_t xz_running_obj;
extern const mp_obj_type_t xz_speech_type;
extern const mp_obj_type_t xz_audioin_type;
extern const mp_obj_type_t xz_audioout_type;
extern const mp_obj_type_t xz_mp3player_type;

#endif
