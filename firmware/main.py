# Board entry point: MicroPython runs this after boot.py; on the host run it
# as `micropython firmware/main.py --state DIR` (see docs/firmware.md).
# Everything lives in app/; app/heap.py says what is loaded when (the unix
# port compiles every module into its 256 KB heap, the board runs them
# frozen from flash).
from app import heap

heap.start()

from app.main import main  # noqa: E402

main()
