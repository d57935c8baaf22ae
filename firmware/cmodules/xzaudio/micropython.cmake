# xzaudio as a MicroPython user C module (CMake ports). On the ESP32 port it
# brings the board engine (I2S in three wirings, codec task, MP3 task, the
# esp-sr speech engine): its ESP-IDF component needs (libopus,
# esp_audio_codec, esp-sr) are declared in this folder's
# idf_component.yml, which the port's main component must merge
# (docs/cmodule.md). Compiled only with ESP-IDF; the portable core is also
# built and tested on the host by mk/cmodule.mk.
add_library(usermod_xzaudio INTERFACE)

set(XZAUDIO_DIR ${CMAKE_CURRENT_LIST_DIR})

target_sources(usermod_xzaudio INTERFACE
    ${XZAUDIO_DIR}/mod_xzaudio.c
    ${XZAUDIO_DIR}/core/xz_ring.c
    ${XZAUDIO_DIR}/core/xz_frame.c
    ${XZAUDIO_DIR}/core/xz_opus.c
    ${XZAUDIO_DIR}/core/xz_resample.c
    ${XZAUDIO_DIR}/core/xz_mp3info.c
    ${XZAUDIO_DIR}/core/xz_pcm.c
    ${XZAUDIO_DIR}/core/xz_words.c
)

target_include_directories(usermod_xzaudio INTERFACE
    ${XZAUDIO_DIR}
    ${XZAUDIO_DIR}/core
)

if(IDF_TARGET)
    # Board build: the engine and the I/O objects.
    target_sources(usermod_xzaudio INTERFACE
        ${XZAUDIO_DIR}/mod_xzaudio_io.c
        ${XZAUDIO_DIR}/mod_xzaudio_speech.c
        ${XZAUDIO_DIR}/esp32/xz_engine.c
        ${XZAUDIO_DIR}/esp32/xz_i2s.c
        ${XZAUDIO_DIR}/esp32/xz_mp3task.c
        ${XZAUDIO_DIR}/esp32/xz_speech.c
    )
    target_include_directories(usermod_xzaudio INTERFACE ${XZAUDIO_DIR}/esp32)
    target_compile_definitions(usermod_xzaudio INTERFACE XZ_HAVE_IO=1)
    # libopus (78/esp-opus), esp_audio_codec and esp-sr reach this code
    # through the main component: once idf_component.yml is merged into its
    # manifest, main requires them, so their headers and libraries are there.
endif()

target_link_libraries(usermod INTERFACE usermod_xzaudio)
