"""Consistency of the compose bundle: services, mounts, provisioning paths,
the Dockerfile and the OpenTelemetry collector configuration. (No docker here:
these are file-level checks; the compose file is exercised by `docker compose
config` wherever docker exists.)"""

from __future__ import annotations

import re

import yaml

from lrolib import DASHBOARDS, REPO

DEPLOY = REPO / "deploy"


def load(path):
    return yaml.safe_load((DEPLOY / path).read_text(encoding="utf-8"))


def test_compose_services_and_mounts():
    compose = load("docker-compose.yml")
    services = compose["services"]
    assert {"memory-server", "prometheus", "grafana", "otel-collector"} <= set(services)

    ms = services["memory-server"]
    assert ms["build"] == {"context": "..", "dockerfile": "deploy/Dockerfile"}
    assert ms["command"] == ["--http", "0.0.0.0:8080", "--allow-unauthenticated", "--metrics", "0.0.0.0:9464"]
    assert ms["environment"]["OTEL_EXPORTER_OTLP_ENDPOINT"] == "http://otel-collector:4317"
    assert (REPO / ms["build"]["dockerfile"]).is_file()

    # Every bind mount's source exists (paths are relative to deploy/).
    for name, svc in services.items():
        for volume in svc.get("volumes", []):
            source = volume.split(":")[0]
            if source.startswith("."):
                assert (DEPLOY / source).exists(), f"{name}: {source} does not exist"
            else:
                assert source in compose.get("volumes", {}), f"{name}: undeclared volume {source}"

    grafana_mounts = dict(v.split(":")[:2] for v in services["grafana"]["volumes"])
    assert grafana_mounts["./grafana/provisioning"] == "/etc/grafana/provisioning"
    dash_mount = grafana_mounts["../dashboards"]
    provider = load("grafana/provisioning/dashboards/lro.yml")["providers"][0]
    assert provider["type"] == "file" and provider["options"]["path"] == dash_mount
    for d in DASHBOARDS:
        assert (REPO / "dashboards" / d).is_file()

    prom_mounts = dict(v.split(":")[:2] for v in services["prometheus"]["volumes"])
    assert prom_mounts["./prometheus"] == "/etc/prometheus"
    assert "--config.file=/etc/prometheus/prometheus.yml" in services["prometheus"]["command"]

    collector = services["otel-collector"]
    cfg_mount = dict(v.split(":")[:2] for v in collector["volumes"])["./otel-collector.yaml"]
    assert any(cfg_mount in arg for arg in collector["command"])
    assert {"4317:4317", "4318:4318"} <= set(collector["ports"])


def test_prometheus_scrapes_the_demo():
    cfg = load("prometheus/prometheus.yml")
    job = next(j for j in cfg["scrape_configs"] if j["job_name"] == "memory-server")
    assert job["static_configs"][0]["targets"] == ["memory-server:9464"]
    assert cfg["rule_files"] == ["alerts.yml"]


def test_grafana_datasource_matches_prometheus():
    ds = load("grafana/provisioning/datasources/prometheus.yml")["datasources"][0]
    assert ds["type"] == "prometheus" and ds["url"] == "http://prometheus:9090"
    assert ds["isDefault"] is True
    scrape = load("prometheus/prometheus.yml")["global"]["scrape_interval"]
    assert ds["jsonData"]["timeInterval"] == scrape, "$__rate_interval depends on it"


def test_otel_collector_config():
    cfg = load("otel-collector.yaml")
    protocols = cfg["receivers"]["otlp"]["protocols"]
    assert protocols["grpc"]["endpoint"].endswith(":4317")
    assert protocols["http"]["endpoint"].endswith(":4318")
    assert "debug" in cfg["exporters"]
    traces = cfg["service"]["pipelines"]["traces"]
    assert "otlp" in traces["receivers"] and "debug" in traces["exporters"]
    for kind in ("receivers", "processors", "exporters"):
        for component in traces.get(kind, []):
            assert component in cfg[kind], f"pipeline uses undefined {kind[:-1]} {component}"
    for ext in cfg["service"].get("extensions", []):
        assert ext in cfg["extensions"]


def test_dockerfile():
    text = (DEPLOY / "Dockerfile").read_text(encoding="utf-8")
    stages = re.findall(r"^FROM\s+(\S+)(?:\s+AS\s+(\S+))?", text, re.MULTILINE | re.IGNORECASE)
    assert len(stages) >= 2, "multi-stage build"
    assert re.search(r"cargo build[^\n]*--release[^\n]*-p memory-server", text)
    assert "COPY --from=build" in text
    assert re.search(r"^USER\s+(?!root)", text, re.MULTILINE), "runs as a non-root user"
    assert 'CMD ["--http", "0.0.0.0:8080", "--allow-unauthenticated", "--metrics", "0.0.0.0:9464"]' in text
    assert 'ENTRYPOINT ["memory-server"]' in text
