"""OTA identity, as an outsider would try it (issue 26; held): another
device's token with a victim's Device-Id, the victim's Device-Id with any
Client-Id, codes nobody shows, and a code approved once and shown again.
None of them yields the victim's credentials or rebinds it."""
from test_control_activation import KID, ota

VICTIM = {"Device-Id": "02:00:00:00:bb:01", "Client-Id": "victim-client"}


async def test_another_devices_token_or_client_id_gets_nothing_of_the_victim(start_control):
    api = await start_control(auth={"tokens": ["shared-secret"]})
    code = (await ota(api, VICTIM))[1]["activation"]["code"]
    assert (await api.post("/api/activations/%s" % code, None))[0] == 200
    victim_token = (await ota(api, VICTIM))[1]["websocket"]["token"]

    mine = (await api.post("/api/devices/%s/credentials" % KID["Device-Id"], None))[1]["token"]
    for headers in ({"Device-Id": VICTIM["Device-Id"], "Client-Id": "x", "Authorization": "Bearer " + mine},
                    {"Device-Id": VICTIM["Device-Id"], "Client-Id": "x", "Authorization": "Bearer shared-secret"},
                    {"Device-Id": VICTIM["Device-Id"], "Client-Id": VICTIM["Client-Id"].upper()},
                    {"Device-Id": VICTIM["Device-Id"].upper(), "Client-Id": VICTIM["Client-Id"]},
                    {"Device-Id": VICTIM["Device-Id"]}):
        status, ans = await ota(api, headers)
        assert status == 200 and ans["websocket"]["token"] == "", headers
        assert "username" not in ans["control_mqtt"], headers

    # Guessed codes are unknown; the one approved is not approved again.
    for guess in ("000000", "123456", "999999", code):
        assert (await api.post("/api/activations/%s" % guess, None))[0] == 404
    # A code an intruder asked for with the victim's id waits; the victim still gets its own token.
    intruder = dict(VICTIM, **{"Client-Id": "intruder"})
    assert (await ota(api, intruder))[1]["activation"]["code"] != code
    assert (await ota(api, VICTIM))[1]["websocket"]["token"] == victim_token
