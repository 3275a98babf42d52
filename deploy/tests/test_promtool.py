"""promtool accepts the Prometheus configuration and the alert rules, and the
rule unit tests (deploy/prometheus/alerts_test.yml) pass."""

import shutil
import subprocess

import pytest

from lrolib import PROM_DIR, REPO

PROMTOOL = shutil.which("promtool")


def promtool(*args: str) -> subprocess.CompletedProcess:
    if PROMTOOL is None:
        pytest.fail("promtool not found: apt-get install -y prometheus (Debian's package ships promtool)")
    proc = subprocess.run([PROMTOOL, *args], cwd=REPO, capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, f"promtool {' '.join(args)} failed ({proc.returncode}):\n{proc.stdout}\n{proc.stderr}"
    return proc


def test_check_config():
    out = promtool("check", "config", str((PROM_DIR / "prometheus.yml").relative_to(REPO)))
    assert "SUCCESS" in out.stdout + out.stderr


def test_check_rules_with_lint():
    out = promtool("check", "rules", "--lint=all", "--lint-fatal", str((PROM_DIR / "alerts.yml").relative_to(REPO)))
    assert "SUCCESS" in out.stdout + out.stderr


def test_rule_unit_tests():
    out = promtool("test", "rules", str((PROM_DIR / "alerts_test.yml").relative_to(REPO)))
    assert "SUCCESS" in out.stdout + out.stderr


def test_every_alert_is_unit_tested_firing_and_not_firing():
    import yaml

    from lrolib import load_rules

    doc = yaml.safe_load((PROM_DIR / "alerts_test.yml").read_text(encoding="utf-8"))
    firing: set[str] = set()
    quiet: set[str] = set()
    for test in doc["tests"]:
        for case in test.get("alert_rule_test", []):
            (firing if case.get("exp_alerts") else quiet).add(case["alertname"])
    alerts = {r["alert"] for r in load_rules() if "alert" in r}
    assert alerts - firing == set(), "alerts never tested firing"
    assert alerts - quiet == set(), "alerts never tested not firing"
    # Both LroCleanupStalled rules (stale and never succeeded) fire in some test.
    causes = {
        a["exp_labels"].get("cause")
        for t in doc["tests"]
        for c in t.get("alert_rule_test", [])
        if c["alertname"] == "LroCleanupStalled"
        for a in c.get("exp_alerts") or []
    }
    assert causes == {"stale", "never_succeeded"}
