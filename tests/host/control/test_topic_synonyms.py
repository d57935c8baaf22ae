"""A parent sees what each blocked topic also blocks (issue 37: synonyms a
parent can see and edit), edits it through the API, and the voice side's
filter follows: the built-in list until they edit it, their own after,
the built-in one again when they set null."""
from xiaozhi_server.pipeline.safety import SafetyFilter
from xiaozhi_server.text.lines import Lines

BASE = "/api/devices/bear2/topics"


def _filter(api):
    return SafetyFilter("bear2", api.server.control.store.care, Lines.load(), lambda: True)


async def test_a_parent_sees_and_edits_each_topics_synonyms(api):
    status, body = await api.call("PUT", BASE, {"blocked_topics": ["Ghosts", "打架"]})
    assert status == 200 and body["synonyms_edited"] == []
    assert "phantom" in body["synonyms"]["Ghosts"] and "打斗" in body["synonyms"]["打架"]
    assert await _filter(api).find("a phantom in the attic") == "Ghosts"

    status, body = await api.call("PUT", BASE, {"blocked_topics": ["Ghosts", "打架"],
                                               "synonyms": {"ghosts": ["spectre", " spectre ", "poltergeist"]}})
    assert status == 200 and body["synonyms"]["Ghosts"] == ["spectre", "poltergeist"]
    assert body["synonyms_edited"] == ["Ghosts"] and "打斗" in body["synonyms"]["打架"]
    f = _filter(api)
    assert await f.find("a spectre in the attic") == "Ghosts"
    assert await f.find("a phantom in the attic") is None      # the parent took it out
    assert await f.find("他们在打斗") == "打架"

    # a PUT without synonyms keeps the edits of the topics still listed
    status, body = await api.call("PUT", BASE, {"blocked_topics": ["Ghosts"], "redirect_line": "Let's sing!"})
    assert body["synonyms"] == {"Ghosts": ["spectre", "poltergeist"]}
    # null: the built-in list again
    status, body = await api.call("PUT", BASE, {"blocked_topics": ["Ghosts"], "synonyms": {"Ghosts": None}})
    assert body["synonyms_edited"] == [] and "phantom" in body["synonyms"]["Ghosts"]
    assert (await api.get(BASE))[1] == body


async def test_bad_synonyms_get_a_400_that_names_them_and_change_nothing(api):
    await api.call("PUT", BASE, {"blocked_topics": ["Ghosts"], "synonyms": {"Ghosts": ["spectre"]}})
    for synonyms, named in [(["spectre"], "synonyms must be an object"), ({"wolves": ["x"]}, "synonyms.wolves"),
                            ({"Ghosts": "spectre"}, "synonyms.Ghosts"), ({"Ghosts": [""]}, "synonyms.Ghosts"),
                            ({"Ghosts": ["x"] * 21}, "synonyms.Ghosts")]:
        status, out = await api.call("PUT", BASE, {"blocked_topics": ["Ghosts"], "synonyms": synonyms})
        assert status == 400 and named in out["error"]["message"], (synonyms, out)
    assert (await api.get(BASE))[1]["synonyms"] == {"Ghosts": ["spectre"]}
