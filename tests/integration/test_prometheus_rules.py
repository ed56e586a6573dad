"""deploy/prometheus: `promtool check rules` accepts the alerting rules, `promtool test rules`
passes their unit tests, each alert is shown there firing and not firing, and each rule
reads gauges ragd serves.

These need promtool (Debian package `prometheus`). It is not optional: without it the tests
fail and say so, because rules nobody loaded are the thing they exist to catch.
"""

from __future__ import annotations

import re
import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest
import yaml  # type: ignore[import-untyped]  # PyYAML comes with huggingface_hub
from prometheus_client.parser import text_string_to_metric_families

from ragd.service.http.metrics import Metrics, Snapshot, SourceGauges
from tests.conftest import REPO

RULES = REPO / "deploy" / "prometheus" / "ragd-rules.yml"
RULE_TESTS = REPO / "deploy" / "prometheus" / "ragd-rules.test.yml"


def _promtool(*args: str) -> subprocess.CompletedProcess[str]:
    path = shutil.which("promtool")
    if path is None:
        pytest.fail(
            "promtool not found: install the prometheus package (apt-get install prometheus) "
            "to check the alerting rules; CI installs it"
        )
    return subprocess.run(
        [path, *args], capture_output=True, text=True, timeout=120, check=False, cwd=REPO
    )


def _load(path: Path) -> Any:
    return yaml.safe_load(path.read_text())


def _alerts() -> list[dict[str, Any]]:
    return [rule for group in _load(RULES)["groups"] for rule in group["rules"] if "alert" in rule]


def test_promtool_accepts_the_rules() -> None:
    result = _promtool("check", "rules", str(RULES))

    assert result.returncode == 0, result.stdout + result.stderr
    assert f"SUCCESS: {len(_alerts())} rules found" in result.stdout


def test_the_rules_unit_tests_pass() -> None:
    result = _promtool("test", "rules", str(RULE_TESTS))

    assert result.returncode == 0, result.stdout + result.stderr
    assert "SUCCESS" in result.stdout


def test_each_alert_is_tested_firing_and_not_firing() -> None:
    expected: dict[str, list[bool]] = {}
    for case in _load(RULE_TESTS)["tests"]:
        for check in case.get("alert_rule_test", []):
            expected.setdefault(check["alertname"], []).append(bool(check["exp_alerts"]))

    names = [alert["alert"] for alert in _alerts()]
    assert {
        "RagdDocumentsStale",
        "RagdStoresDisagree",
        "RagdWriterDead",
        "RagdScanOverdue",
        "RagdDocumentsFailed",
        "RagdWatcherDegraded",
    } <= set(names)
    assert {name: sorted(set(expected.get(name, []))) for name in names} == {
        name: [False, True] for name in names
    }


def test_each_alert_waits_has_a_severity_and_says_what_to_do() -> None:
    for alert in _alerts():
        assert re.fullmatch(r"\d+[mh]", alert["for"]), alert["alert"]
        assert alert["labels"]["severity"] in ("critical", "warning"), alert["alert"]
        assert set(alert["annotations"]) == {"summary", "description"}, alert["alert"]


def test_the_rules_read_only_gauges_ragd_serves() -> None:
    gauges = SourceGauges(1, 1, 0, {}, 0.0, 1.0, False)
    snapshot = Snapshot({"docs": gauges}, stores_agree=True, writer_alive=True)
    served = {
        family.name
        for family in text_string_to_metric_families(Metrics(lambda: snapshot).render().decode())
    }

    replica = Metrics(lambda: snapshot, replica=lambda: (3, 0.0)).render().decode()
    replica_served = {family.name for family in text_string_to_metric_families(replica)}
    used = {name for alert in _alerts() for name in re.findall(r"\bragd_\w+", alert["expr"])}

    assert used == {
        "ragd_documents_stale",
        "ragd_stores_agree",
        "ragd_writer_alive",
        "ragd_last_scan_timestamp_seconds",
        "ragd_documents_failed",
        "ragd_watcher_degraded",
        "ragd_replica_lag_seconds",
    }
    assert used <= served | replica_served
