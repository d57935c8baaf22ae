# The device app: main.py starts it, device.py ties the rooms together
# (voice/, player/, entry/, control/, boot/), heap.py owns the load order.
# See docs/firmware.md for the map.
