# The SD card's repeat player and its decoding backends.
