"""docs/openapi.yaml is a valid OpenAPI 3.1 file that describes every route
the API serves, and docs/api.md names them all."""
import re

import yaml
from openapi_spec_validator import validate

from testkit import ROOT
from xiaozhi_server.api.routes import routes


def _spec():
    with open(ROOT / "docs" / "openapi.yaml", encoding="utf-8") as f:
        return yaml.safe_load(f)


def test_openapi_file_is_valid_3_1():
    spec = _spec()
    assert spec["openapi"].startswith("3.1")
    validate(spec)


def test_every_route_is_in_the_openapi_file_and_nothing_else():
    paths = _spec()["paths"]
    served = {(m.lower(), p) for m, p, _ in routes()}
    documented = {(m, p) for p, item in paths.items() for m in item if m != "parameters"}
    assert served == documented


def test_api_md_names_every_route():
    text = (ROOT / "docs" / "api.md").read_text(encoding="utf-8")
    rows = set(re.findall(r"\| `(GET|POST|PUT|PATCH|DELETE)` \| `([^`]+)` \|", text))
    assert {(m, p) for m, p, _ in routes()} <= rows
