# Asked once per boot, then dropped (app/heap.py): the command line and
# config.json, the OTA check and the activation flow.
