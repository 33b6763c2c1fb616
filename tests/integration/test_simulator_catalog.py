"""A generated catalog (provider_canary/simulator/catalog.py), served over a real loopback connection: an exact mix,
deterministic by seed, and every endpoint doing over the wire what its role says."""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from provider_canary.simulator.catalog import (
    CatalogSpec,
    catalog_fleet,
    catalog_toml,
    endpoint_role,
    fleet_from_spec,
    planned_first_token_s,
    role_counts,
    roles,
)
from provider_canary.simulator.fleet import Fleet
from provider_canary.simulator.fleet_file import load_fleet
from provider_canary.simulator.language import detect_language
from provider_canary.simulator.server import SimulatorHandle, start_simulator
from tasks.errors import FleetError

pytestmark = [pytest.mark.integration, pytest.mark.timeout(60)]

SCALE = 0.05
# 12 endpoints: 3 faulty (the first three kinds of the mix, in turn) and 1 slow start.
SPEC = CatalogSpec(models=3, endpoints=4, faulty_share=0.25, slow_start_share=1 / 12, seed=11)
PROMPT = "Continue the scene at the inn, please. She is waiting for you by the fire."


@pytest.fixture(scope="module")
def sim() -> Iterator[SimulatorHandle]:
    with start_simulator(fleet_from_spec(SPEC), time_scale=SCALE) as handle:
        yield handle


def _get(sim: SimulatorHandle, path: str) -> bytes:
    response = httpx.get(sim.base_url + path, headers={"Authorization": f"Bearer {sim.api_key}"})
    assert response.status_code == 200
    return response.content


def _stream(client: httpx.Client, sim: SimulatorHandle, model: str, tag: str) -> dict[str, Any]:
    """Status, arrival time of the first text, keep-alives before it, and the text of one pinned request."""
    body = {
        "model": model,
        "stream": True,
        "messages": [{"role": "user", "content": PROMPT}],
        "provider": {"only": [tag], "allow_fallbacks": False},
    }
    out: dict[str, Any] = {"first_text_s": None, "keepalives": 0, "text": "", "done": False}
    start = time.monotonic()
    headers = {"Authorization": f"Bearer {sim.api_key}"}
    with client.stream("POST", sim.base_url + "/chat/completions", json=body, headers=headers) as response:
        out["status"] = response.status_code
        if response.status_code != 200:
            response.read()
            return out
        for line in response.iter_lines():
            if line.startswith(":") and out["first_text_s"] is None:
                out["keepalives"] += 1
            elif line == "data: [DONE]":
                out["done"] = True
            elif line.startswith("data: {"):
                piece = json.loads(line[6:])["choices"][0]["delta"].get("content") or ""
                if piece and out["first_text_s"] is None:
                    out["first_text_s"] = time.monotonic() - start
                out["text"] += piece
    return out


def test_the_mix_is_exact_and_spreads_the_fault_kinds() -> None:
    fleet = fleet_from_spec(SPEC)
    assert role_counts(fleet) == {
        "corrupted_opening": 1,
        "healthy": 8,
        "http_error_before_stream": 1,
        "language_switch": 1,
        "slow_start": 1,
    }
    assert [m.id for m in fleet.models] == [
        "meta-llama/catalog-000",
        "mistralai/catalog-001",
        "qwen/catalog-002",
    ]
    assert all(len(m.endpoints) == 4 for m in fleet.models)
    healthy = [e for m in fleet.models for e in m.endpoints if endpoint_role(e) == "healthy"]
    assert all(0.24 <= e.ttft_s <= 0.36 for e in healthy)  # 0.3 s +- 20 %
    big = role_counts(catalog_fleet(models=100, endpoints=15, seed=1))
    assert big["healthy"] == 1500 - 75 - 100 and big["slow_start"] == 100
    assert len(big) == 2 + 12 and min(v for k, v in big.items() if k not in ("healthy", "slow_start")) == 6


def test_same_seed_same_catalog_another_seed_another_placement() -> None:
    assert fleet_from_spec(SPEC) == fleet_from_spec(SPEC)
    other = catalog_fleet(models=3, endpoints=4, faulty_share=0.25, slow_start_share=1 / 12, seed=12)
    assert roles(other) != roles(fleet_from_spec(SPEC))
    assert role_counts(other) == role_counts(fleet_from_spec(SPEC))


def test_a_fleet_file_catalog_table_loads_the_generated_catalog(tmp_path: Path) -> None:
    path = tmp_path / "catalog.toml"
    path.write_text(catalog_toml(SPEC))
    loaded = load_fleet(path)
    assert loaded == fleet_from_spec(SPEC) and loaded.source == str(path)
    path.write_text("[catalog]\nmodels = 3\nendpoint = 4\n")
    with pytest.raises(FleetError, match=r"^fleet: catalog: unknown key 'endpoint'"):
        load_fleet(path)
    path.write_text("[catalog]\nfaulty_share = 1.5\n")
    with pytest.raises(
        FleetError, match=r"catalog.faulty_share must be a number between 0 and 1 \(got 1.5\)"
    ):
        load_fleet(path)
    path.write_text('[catalog]\nmodels = 2\n[[models]]\nid = "a/b"\n')
    with pytest.raises(FleetError, match="unknown key 'models'"):
        load_fleet(path)


def test_two_simulators_with_one_seed_serve_the_same_catalog(sim: SimulatorHandle) -> None:
    fleet: Fleet = sim.fleet
    listed = json.loads(_get(sim, "/models"))["data"]
    assert [m["id"] for m in listed] == [m.id for m in fleet.models]
    with start_simulator(fleet_from_spec(SPEC), time_scale=SCALE) as twin:
        for model in fleet.models:
            payload = _get(sim, f"/models/{model.id}/endpoints")
            assert payload == _get(twin, f"/models/{model.id}/endpoints")
            tags = [e["tag"] for e in json.loads(payload)["data"]["endpoints"]]
            assert sorted(tags) == sorted(e.tag for e in model.endpoints)
        assert _get(sim, "/models") == _get(twin, "/models")
    other = catalog_fleet(models=3, endpoints=4, seed=12)
    with start_simulator(other, time_scale=SCALE) as stranger:
        assert _get(stranger, "/models/meta-llama/catalog-000/endpoints") != _get(
            sim, "/models/meta-llama/catalog-000/endpoints"
        )


def test_every_endpoint_does_what_its_role_says(sim: SimulatorHandle) -> None:
    seen: dict[str, int] = {}
    with httpx.Client(timeout=10) as client:
        for model in sim.fleet.models:
            for ep in model.endpoints:
                role = endpoint_role(ep)
                seen[role] = seen.get(role, 0) + 1
                got = _stream(client, sim, model.id, ep.tag)
                planned = planned_first_token_s(ep) * SCALE
                if role == "healthy":
                    assert got["status"] == 200 and got["done"], ep.tag
                    assert planned * 0.9 <= got["first_text_s"] <= planned + 0.25, (ep.tag, got)
                    assert detect_language(got["text"]) == "en"
                elif role == "slow_start":
                    assert planned == 12 * SCALE
                    assert got["status"] == 200 and got["done"] and got["first_text_s"] >= planned * 0.9
                    assert got["keepalives"] >= 6  # one at once, then one every 2 of the 12 simulated seconds
                elif role == "http_error_before_stream":
                    assert got["status"] == 503
                elif role == "language_switch":
                    assert detect_language(got["text"]) == "ko"
                elif role == "corrupted_opening":  # rate 0.95: request 0 is the clean one, then 19 in 20
                    assert not got["text"].startswith(tuple(ep.faults[0].params["prefixes"]))
                    prefixes = tuple(ep.faults[0].params["prefixes"])
                    again = _stream(client, sim, model.id, ep.tag)
                    assert again["text"].startswith(prefixes), again["text"][:20]
                else:
                    pytest.fail(f"unexpected role {role}")
    assert seen == role_counts(sim.fleet)
