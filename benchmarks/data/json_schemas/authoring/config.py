"""Configuration files: services, CI pipelines, feature flags, logging, deployments, tooling."""

from __future__ import annotations

from .common import DATETIME, EMAIL, IPV4, SEMVER, URI
from .dsl import A, B, C, Corpus, E, I, N, O, S, maybe, null

config = Corpus("config")
add = config.add

LOG_LEVEL = E("trace", "debug", "info", "warn", "error")
DURATION = S(pattern="^[0-9]+(ms|s|m|h)$", ex=["30s", "500ms", "5m", "1h"])
ENV_MAP = O({}, extra=S())
PORT = I(lo=1, hi=65535)
HOST = S(lo=1, hi=253, pattern="^[a-zA-Z0-9.-]+$", ex=["localhost", "db.internal", "api.example.com"])
IMAGE = S(pattern="^[a-z0-9./-]+(:[A-Za-z0-9._-]+)?$", ex=["nginx:1.25", "redis:7.2-alpine", "ghcr.io/example/api:2.3.1"])
K8S_NAME = S(lo=1, hi=63, pattern="^[a-z0-9]([-a-z0-9]*[a-z0-9])?$", ex=["web", "api-server", "worker-2"])
CPU = S(pattern="^[0-9]+m?$", ex=["250m", "1", "500m", "2"])
MEMORY = S(pattern="^[0-9]+(Mi|Gi)$", ex=["256Mi", "1Gi", "512Mi"])
TLS = O({"enabled": B(), "cert_file?": S(), "key_file?": S(), "min_version?": E("1.2", "1.3")})

add(
    "http_server_config",
    "HTTP service settings",
    O(
        {
            "host": HOST,
            "port": PORT,
            "workers": I(lo=1, hi=64),
            "read_timeout": DURATION,
            "write_timeout": DURATION,
            "tls": TLS,
            "cors": O({"allowed_origins": A(S(lo=1), hi=5), "allow_credentials": B(), "max_age_seconds?": I(lo=0)}),
            "log_level": LOG_LEVEL,
        }
    ),
)
add(
    "database_config",
    "Database connection settings",
    O(
        {
            "driver": E("postgres", "mysql", "sqlite", "sqlserver"),
            "host": HOST,
            "port": PORT,
            "database": S(lo=1, hi=63),
            "user": S(lo=1),
            "password_env": S(pattern="^[A-Z_][A-Z0-9_]*$", ex=["DB_PASSWORD", "PG_PASS"]),
            "pool": O({"min": I(lo=0, hi=100), "max": I(lo=1, hi=500), "idle_timeout": DURATION}),
            "ssl_mode": E("disable", "require", "verify-ca", "verify-full"),
            "replicas?": A(O({"host": HOST, "port": PORT, "weight?": I(lo=1, hi=100)}), hi=3),
        }
    ),
)
add(
    "cache_config",
    "Cache settings",
    O({"backend": E("memory", "redis", "memcached"), "url?": null(URI), "ttl_seconds": I(lo=0, hi=604800), "max_entries": I(lo=1), "compress": B()}),
    examples=3,
)
add(
    "logging_config",
    "Structured logging configuration",
    O(
        {
            "version": C(1),
            "level": LOG_LEVEL,
            "format": E("json", "text", "logfmt"),
            "outputs": A(
                O({"type": E("stdout", "stderr", "file", "syslog"), "path?": S(), "rotate?": O({"max_size_mb": I(lo=1), "max_files": I(lo=1, hi=100)})}),
                lo=1,
                hi=4,
            ),
            "loggers": O({}, extra=LOG_LEVEL),
            "include_caller": B(),
            "sampling?": null(O({"initial": I(lo=1), "thereafter": I(lo=1)})),
        }
    ),
)
add(
    "feature_flags",
    "Feature flag definitions",
    O(
        {
            "version": I(lo=1),
            "flags": A(
                O(
                    {
                        "key": S(pattern="^[a-z][a-z0-9_]{2,49}$", ex=["new_checkout", "dark_mode", "beta_search"]),
                        "description?": S(),
                        "enabled": B(),
                        "rollout_percent": I(lo=0, hi=100),
                        "variants?": A(O({"name": S(lo=1), "weight": I(lo=0, hi=100)}), hi=4),
                        "targeting?": O({"countries": A(S(pattern="^[A-Z]{2}$", ex=["DE", "US"]), hi=5), "plans": A(E("free", "pro", "enterprise"), hi=3)}),
                    }
                ),
                hi=6,
            ),
        }
    ),
)
add(
    "feature_flag_single",
    "One feature flag",
    O({"key": S(pattern="^[a-z][a-z0-9_]{2,49}$", ex=["new_checkout", "beta_search"]), "enabled": B(), "rollout_percent": I(lo=0, hi=100, mult=5), "owner": EMAIL}),
    examples=3,
)
add(
    "ci_pipeline",
    "Continuous integration pipeline",
    O(
        {
            "name": S(lo=1),
            "on": O({"push?": O({"branches": A(S(lo=1), lo=1)}), "pull_request?": O({"branches": A(S(lo=1), lo=1)}), "schedule?": A(O({"cron": S(lo=9)}), hi=2)}),
            "env?": ENV_MAP,
            "jobs": A(
                O(
                    {
                        "id": S(pattern="^[a-z][a-z0-9_-]*$", ex=["build", "test", "lint", "deploy-prod"]),
                        "runs_on": E("ubuntu-latest", "macos-latest", "windows-latest"),
                        "needs": A(S(pattern="^[a-z][a-z0-9_-]*$", ex=["build", "test"]), hi=3),
                        "timeout_minutes": I(lo=1, hi=360),
                        "steps": A(
                            O({"name": S(lo=1), "uses?": S(pattern="^[a-z0-9-]+/[a-z0-9-]+@v[0-9]+$", ex=["actions/checkout@v4", "actions/setup-python@v5"]), "run?": S(lo=1), "continue_on_error?": B()}),
                            lo=1,
                            hi=5,
                        ),
                        "matrix?": O({"python": A(E("3.9", "3.10", "3.11", "3.12"), lo=1, unique=True), "os?": A(S(), hi=3)}),
                    }
                ),
                lo=1,
                hi=4,
            ),
        }
    ),
)
add(
    "ci_job_result",
    "Result of one CI job",
    O(
        {
            "job": S(lo=1),
            "status": E("queued", "running", "success", "failure", "cancelled", "skipped"),
            "duration_s": I(lo=0),
            "started_at": DATETIME,
            "artifacts": A(O({"name": S(lo=1), "size_bytes": I(lo=0), "url": URI}), hi=3),
            "failed_step?": null(S()),
        }
    ),
    examples=3,
)
add(
    "k8s_deployment",
    "A container deployment, in the shape of a Kubernetes manifest",
    O(
        {
            "apiVersion": C("apps/v1"),
            "kind": C("Deployment"),
            "metadata": O({"name": K8S_NAME, "namespace": K8S_NAME, "labels": O({}, extra=S(hi=63))}),
            "spec": O(
                {
                    "replicas": I(lo=0, hi=100),
                    "selector": O({"matchLabels": O({}, extra=S(hi=63))}),
                    "strategy?": O({"type": E("RollingUpdate", "Recreate"), "maxSurge?": I(lo=0), "maxUnavailable?": I(lo=0)}),
                    "template": O(
                        {
                            "containers": A(
                                O(
                                    {
                                        "name": K8S_NAME,
                                        "image": IMAGE,
                                        "ports": A(O({"containerPort": PORT, "protocol": E("TCP", "UDP")}), hi=3),
                                        "env": A(O({"name": S(pattern="^[A-Z_][A-Z0-9_]*$", ex=["LOG_LEVEL", "PORT"]), "value": S()}), hi=4),
                                        "resources": O({"requests": O({"cpu": CPU, "memory": MEMORY}), "limits": O({"cpu": CPU, "memory": MEMORY})}),
                                        "readinessProbe?": O({"path": S(pattern="^/", ex=["/healthz", "/ready"]), "port": PORT, "periodSeconds": I(lo=1, hi=300)}),
                                    }
                                ),
                                lo=1,
                                hi=3,
                            )
                        }
                    ),
                }
            ),
        }
    ),
)
add(
    "k8s_service",
    "A service exposing pods, in the shape of a Kubernetes manifest",
    O(
        {
            "apiVersion": C("v1"),
            "kind": C("Service"),
            "metadata": O({"name": K8S_NAME, "namespace?": K8S_NAME}),
            "spec": O(
                {
                    "type": E("ClusterIP", "NodePort", "LoadBalancer"),
                    "selector": O({}, extra=S()),
                    "ports": A(O({"name?": K8S_NAME, "port": PORT, "targetPort": PORT, "protocol": E("TCP", "UDP")}), lo=1, hi=4),
                }
            ),
        }
    ),
)
add(
    "k8s_configmap",
    "A configuration map",
    O({"apiVersion": C("v1"), "kind": C("ConfigMap"), "metadata": O({"name": K8S_NAME}), "data": O({}, extra=S())}),
    examples=3,
)
add(
    "k8s_cronjob",
    "A scheduled job",
    O(
        {
            "name": K8S_NAME,
            "schedule": S(pattern="^[0-9*/,-]+ [0-9*/,-]+ [0-9*/,-]+ [0-9*/,-]+ [0-9*/,-]+$", ex=["*/5 * * * *", "0 3 * * 1", "30 2 1 * *"]),
            "image": IMAGE,
            "command": A(S(lo=1), lo=1, hi=6),
            "concurrency_policy": E("Allow", "Forbid", "Replace"),
            "backoff_limit": I(lo=0, hi=10),
            "suspend": B(),
        }
    ),
)
add(
    "docker_compose_service",
    "One service of a compose file",
    O(
        {
            "image": IMAGE,
            "container_name?": S(),
            "restart": E("no", "always", "on-failure", "unless-stopped"),
            "ports": A(S(pattern="^[0-9]{1,5}:[0-9]{1,5}$", ex=["8080:80", "5432:5432"]), hi=4),
            "environment": O({}, extra=S()),
            "volumes": A(S(pattern="^[^:]+:[^:]+(:ro)?$", ex=["./data:/var/lib/data", "logs:/var/log:ro"]), hi=4),
            "depends_on": A(S(lo=1), hi=4, unique=True),
            "healthcheck?": O({"test": A(S(), lo=1), "interval": DURATION, "retries": I(lo=1, hi=10)}),
        }
    ),
)
add(
    "reverse_proxy_routes",
    "Routing table of a reverse proxy",
    O(
        {
            "listen": PORT,
            "routes": A(
                O(
                    {
                        "match": O({"host?": HOST, "path_prefix": S(pattern="^/", ex=["/api", "/static", "/"]), "methods?": A(E("GET", "POST", "PUT", "DELETE", "PATCH"), unique=True)}),
                        "upstreams": A(O({"url": URI, "weight": I(lo=1, hi=100)}), lo=1, hi=3),
                        "strip_prefix": B(),
                        "timeout": DURATION,
                        "rate_limit?": null(O({"requests": I(lo=1), "per": E("second", "minute", "hour")})),
                    }
                ),
                lo=1,
                hi=4,
            ),
        }
    ),
)
add(
    "alerting_rule",
    "Monitoring alert rule",
    O(
        {
            "alert": S(pattern="^[A-Z][A-Za-z0-9]+$", ex=["HighErrorRate", "DiskAlmostFull", "PodCrashLooping"]),
            "expr": S(lo=1),
            "for": DURATION,
            "severity": E("info", "warning", "critical"),
            "labels": O({}, extra=S()),
            "annotations": O({"summary": S(lo=1), "runbook_url?": URI}),
        }
    ),
)
add(
    "backup_policy",
    "Backup schedule and retention",
    O(
        {
            "enabled": B(),
            "schedule": E("hourly", "daily", "weekly"),
            "retention": O({"daily": I(lo=0, hi=31), "weekly": I(lo=0, hi=52), "monthly": I(lo=0, hi=120)}),
            "destination": O({"type": E("s3", "gcs", "azure", "local"), "bucket?": S(pattern="^[a-z0-9.-]{3,63}$", ex=["backups-prod", "acme.archive"]), "path": S()}),
            "encryption": E("none", "aes256", "kms"),
            "notify": A(EMAIL, hi=3),
        }
    ),
)
add(
    "firewall_rules",
    "Firewall rule set",
    O(
        {
            "default_policy": E("allow", "deny"),
            "rules": A(
                O(
                    {
                        "priority": I(lo=1, hi=1000),
                        "action": E("allow", "deny", "log"),
                        "direction": E("ingress", "egress"),
                        "protocol": E("tcp", "udp", "icmp", "any"),
                        "source": IPV4,
                        "port_range?": O({"from": PORT, "to": PORT}),
                        "comment?": S(hi=100),
                    }
                ),
                hi=6,
            ),
        }
    ),
)
add(
    "vpn_peer",
    "VPN peer configuration",
    O({"name": S(lo=1), "public_key": S(pattern="^[A-Za-z0-9+/]{42}[AEIMQUYcgkosw480]=$", ex=["xTIBA5rboUvnH4htodjb6e697QjLERt1NAB4mZqp8Dg="]), "endpoint": S(pattern="^[a-z0-9.-]+:[0-9]{1,5}$", ex=["vpn.example.com:51820"]), "allowed_ips": A(S(pattern="^[0-9.]+/[0-9]{1,2}$", ex=["10.0.0.0/24", "192.168.1.0/24"]), lo=1), "keepalive": I(lo=0, hi=3600)}),
    examples=3,
)
add(
    "dns_zone",
    "DNS zone records",
    O(
        {
            "zone": S(pattern="^([a-z0-9-]+\\.)+[a-z]{2,}$", ex=["example.com", "corp.example.net"]),
            "ttl": I(lo=60, hi=86400),
            "records": A(
                O({"name": S(lo=1), "type": E("A", "AAAA", "CNAME", "MX", "TXT", "NS"), "value": S(lo=1), "ttl?": I(lo=60), "priority?": I(lo=0, hi=65535)}),
                lo=1,
                hi=8,
            ),
        }
    ),
)
add(
    "oauth_client_config",
    "OAuth client registration",
    O(
        {
            "client_id": S(lo=8),
            "client_name": S(lo=1),
            "redirect_uris": A(URI, lo=1, hi=5),
            "grant_types": A(E("authorization_code", "refresh_token", "client_credentials", "device_code"), lo=1, unique=True),
            "scopes": A(S(pattern="^[a-z:._]+$", ex=["openid", "profile", "email", "read:user"]), lo=1, unique=True),
            "token_lifetime_s": I(lo=60, hi=86400),
            "pkce_required": B(),
        }
    ),
)
add(
    "rate_limiter_config",
    "Rate limiter policies",
    O(
        {
            "default": O({"requests": I(lo=1), "window": DURATION}),
            "overrides": A(O({"match": O({"api_key_prefix?": S(), "path?": S()}), "requests": I(lo=1), "window": DURATION, "burst?": I(lo=0)}), hi=4),
            "storage": E("memory", "redis"),
        }
    ),
)
add(
    "message_queue_config",
    "Message broker consumer settings",
    O(
        {
            "brokers": A(S(pattern="^[a-z0-9.-]+:[0-9]{2,5}$", ex=["kafka-1:9092", "broker.internal:9093"]), lo=1, hi=5),
            "topic": S(lo=1, hi=249),
            "group_id": S(lo=1),
            "auto_offset_reset": E("earliest", "latest"),
            "max_poll_records": I(lo=1, hi=10000),
            "session_timeout_ms": I(lo=1000, hi=300000, mult=1000),
            "sasl?": null(O({"mechanism": E("PLAIN", "SCRAM-SHA-256", "SCRAM-SHA-512"), "username": S(), "password_env": S()})),
        }
    ),
)
add(
    "etl_job",
    "Extract-transform-load job",
    O(
        {
            "name": S(lo=1),
            "source": O({"kind": E("postgres", "s3", "http", "sftp"), "uri": URI, "query?": S()}),
            "transforms": A(
                O({"op": E("rename", "drop", "cast", "filter", "dedupe"), "column?": S(), "to?": S(), "expr?": S()}),
                hi=6,
            ),
            "sink": O({"kind": E("bigquery", "snowflake", "parquet", "postgres"), "table": S(lo=1), "mode": E("append", "overwrite", "merge")}),
            "schedule?": null(S(lo=9)),
            "retries": I(lo=0, hi=10),
            "alert_emails": A(EMAIL, hi=3),
        }
    ),
)
add(
    "ml_training_config",
    "Model training run configuration",
    O(
        {
            "experiment": S(lo=1),
            "model": O({"architecture": E("resnet50", "vit_b16", "bert_base", "gpt2_small", "mlp"), "pretrained": B(), "dropout": N(lo=0, xhi=1)}),
            "data": O({"train_path": S(lo=1), "val_path": S(lo=1), "batch_size": I(lo=1, hi=4096), "shuffle": B(), "num_workers": I(lo=0, hi=64)}),
            "optimizer": O({"name": E("sgd", "adam", "adamw", "lion"), "lr": N(xlo=0, hi=1), "weight_decay": N(lo=0), "betas?": A(N(lo=0, xhi=1), lo=2, hi=2)}),
            "scheduler?": null(O({"name": E("cosine", "linear", "step"), "warmup_steps": I(lo=0)})),
            "epochs": I(lo=1, hi=1000),
            "precision": E("fp32", "fp16", "bf16"),
            "seed": I(lo=0),
            "log_every_n_steps": I(lo=1),
        }
    ),
)
add(
    "editor_settings",
    "Code editor settings",
    O(
        {
            "theme": E("light", "dark", "high-contrast"),
            "font_family": S(),
            "font_size": I(lo=6, hi=72),
            "tab_size": E(2, 4, 8),
            "insert_spaces": B(),
            "word_wrap": E("off", "on", "bounded"),
            "format_on_save": B(),
            "rulers": A(I(lo=1, hi=300), hi=3, unique=True),
            "files_exclude": A(S(lo=1), hi=5),
            "telemetry": B(),
        }
    ),
)
add(
    "linter_config",
    "Lint tool configuration",
    O(
        {
            "line_length": I(lo=40, hi=200),
            "target_version": E("py39", "py310", "py311", "py312"),
            "select": A(S(pattern="^[A-Z]{1,3}[0-9]{0,4}$", ex=["E", "F", "I", "UP", "B", "E501"]), lo=1, unique=True),
            "ignore": A(S(pattern="^[A-Z]{1,3}[0-9]{0,4}$", ex=["E501", "D203"]), unique=True),
            "exclude": A(S(lo=1), hi=5),
            "fix": B(),
        }
    ),
    examples=3,
)
add(
    "package_manifest",
    "Application package manifest",
    O(
        {
            "name": S(pattern="^[a-z0-9-]+$", ex=["web-app", "cli-tool"]),
            "version": SEMVER,
            "private": B(),
            "scripts": O({}, extra=S()),
            "dependencies": O({}, extra=S(pattern="^[~^]?[0-9]+\\.[0-9]+\\.[0-9]+$", ex=["^18.2.0", "~4.17.21", "1.6.0"])),
            "engines?": O({"node": S()}),
        }
    ),
)
add(
    "terraform_like_resource",
    "Cloud storage bucket resource",
    O(
        {
            "resource": C("storage_bucket"),
            "name": S(pattern="^[a-z0-9-]{3,63}$", ex=["assets-prod", "logs-archive"]),
            "location": E("EU", "US", "ASIA", "europe-west1", "us-central1"),
            "storage_class": E("STANDARD", "NEARLINE", "COLDLINE", "ARCHIVE"),
            "versioning": B(),
            "lifecycle_rules": A(O({"action": E("Delete", "SetStorageClass"), "age_days": I(lo=1, hi=3650)}), hi=3),
            "labels": O({}, extra=S(pattern="^[a-z0-9_-]{0,63}$", ex=["prod", "team_data", "cost-center-42"])),
            "public_access_prevention": E("enforced", "inherited"),
        }
    ),
)
add(
    "monitoring_dashboard",
    "Dashboard definition",
    O(
        {
            "title": S(lo=1),
            "refresh": E("10s", "30s", "1m", "5m", "off"),
            "time_range": O({"from": S(pattern="^now(-[0-9]+[mhdw])?$", ex=["now-6h", "now-7d", "now"]), "to": S(pattern="^now(-[0-9]+[mhdw])?$", ex=["now"])}),
            "panels": A(
                O(
                    {
                        "id": I(lo=1),
                        "type": E("timeseries", "stat", "table", "gauge", "heatmap"),
                        "title": S(),
                        "query": S(lo=1),
                        "grid": O({"x": I(lo=0, hi=23), "y": I(lo=0), "w": I(lo=1, hi=24), "h": I(lo=1, hi=50)}),
                        "unit?": E("percent", "bytes", "ms", "reqps"),
                    }
                ),
                lo=1,
                hi=4,
            ),
        }
    ),
)
add(
    "mail_server_config",
    "Outgoing mail settings",
    O({"smtp_host": HOST, "smtp_port": E(25, 465, 587, 2525), "starttls": B(), "username": S(), "from_address": EMAIL, "reply_to?": null(EMAIL), "max_per_minute": I(lo=1, hi=10000)}),
    examples=3,
)
add(
    "retry_policy",
    "Retry policy for outbound calls",
    O({"max_attempts": I(lo=1, hi=20), "initial_backoff_ms": I(lo=10, hi=60000, mult=10), "multiplier": N(lo=1, hi=10), "max_backoff_ms": I(lo=100, hi=600000), "retry_on": A(E(408, 429, 500, 502, 503, 504), lo=1, unique=True), "jitter": B()}),
    examples=3,
)
add(
    "auth_policy",
    "Role-based access policy",
    O(
        {
            "version": C("2024-01-01"),
            "statements": A(
                O(
                    {
                        "sid?": S(pattern="^[A-Za-z0-9]+$", ex=["AllowRead", "DenyDelete"]),
                        "effect": E("Allow", "Deny"),
                        "actions": A(S(pattern="^[a-z]+:[A-Za-z*]+$", ex=["s3:GetObject", "db:Query", "iam:*"]), lo=1),
                        "resources": A(S(lo=1), lo=1),
                        "condition?": O({"ip_in?": A(S(), hi=3), "mfa?": B()}),
                    }
                ),
                lo=1,
                hi=4,
            ),
        }
    ),
)
add(
    "search_index_settings",
    "Search index mapping and settings",
    O(
        {
            "index": S(pattern="^[a-z][a-z0-9_-]*$", ex=["products", "logs-2024"]),
            "shards": I(lo=1, hi=64),
            "replicas": I(lo=0, hi=5),
            "fields": A(
                O({"name": S(lo=1), "type": E("text", "keyword", "integer", "float", "date", "boolean", "geo_point"), "searchable": B(), "facet?": B(), "analyzer?": E("standard", "english", "whitespace")}),
                lo=1,
                hi=8,
            ),
        }
    ),
)
add(
    "notification_preferences",
    "Per-channel notification preferences",
    O(
        {
            "email": O({"enabled": B(), "digest": E("off", "daily", "weekly")}),
            "push": O({"enabled": B(), "quiet_hours?": null(O({"start": S(pattern="^[0-2][0-9]:[0-5][0-9]$", ex=["22:00"]), "end": S(pattern="^[0-2][0-9]:[0-5][0-9]$", ex=["07:00"])}))}),
            "sms": O({"enabled": B(), "phone?": null(S(pattern=r"^\+[1-9]\d{6,14}$", ex=["+14155550123"]))}),
            "topics": A(E("security", "billing", "product_updates", "mentions", "newsletter"), unique=True),
        }
    ),
)
add(
    "game_server_config",
    "Multiplayer game server settings",
    O(
        {
            "server_name": S(lo=1, hi=64),
            "max_players": I(lo=2, hi=128),
            "map_rotation": A(S(lo=1), lo=1, hi=8),
            "mode": E("deathmatch", "team", "capture_the_flag", "coop"),
            "tick_rate": E(20, 30, 60, 64, 128),
            "password?": null(S(lo=4)),
            "friendly_fire": B(),
            "admins": A(S(pattern="^[0-9]{17}$", ex=["76561198000000001", "76561198123456789"]), hi=3),
        }
    ),
)
add(
    "cdn_config",
    "CDN distribution settings",
    O(
        {
            "origin": URI,
            "aliases": A(S(pattern="^([a-z0-9-]+\\.)+[a-z]{2,}$", ex=["cdn.example.com", "static.example.org"]), hi=3),
            "cache_behaviors": A(O({"path_pattern": S(lo=1), "ttl_s": I(lo=0, hi=31536000), "compress": B(), "query_string": E("none", "all", "whitelist")}), lo=1, hi=4),
            "price_class": E("all", "200", "100"),
            "http2": B(),
            "waf_enabled": B(),
        }
    ),
)
add(
    "app_manifest_mobile",
    "Mobile app release manifest",
    O(
        {
            "bundle_id": S(pattern="^[a-z]+(\\.[a-z0-9]+)+$", ex=["com.example.app", "io.acme.shop"]),
            "version": SEMVER,
            "build": I(lo=1),
            "min_os": O({"ios": S(pattern="^[0-9]+\\.[0-9]$", ex=["15.0", "16.4"]), "android": I(lo=21, hi=35)}),
            "permissions": A(E("camera", "location", "notifications", "contacts", "microphone"), unique=True),
            "force_update": B(),
            "release_notes": O({}, extra=S(hi=500)),
        }
    ),
)
add(
    "workflow_state_machine",
    "A small workflow definition",
    O(
        {
            "start": S(lo=1),
            "states": A(
                O(
                    {
                        "name": S(lo=1),
                        "type": E("task", "choice", "wait", "succeed", "fail"),
                        "next?": null(S()),
                        "timeout_s?": I(lo=1),
                        "retry?": O({"max": I(lo=0, hi=10), "backoff": N(lo=1)}),
                    }
                ),
                lo=1,
                hi=6,
            ),
        }
    ),
)
add(
    "tsconfig_like",
    "Compiler options of a typed language project",
    O(
        {
            "compilerOptions": O(
                {
                    "target": E("ES2017", "ES2020", "ES2022", "ESNext"),
                    "module": E("commonjs", "esnext", "nodenext"),
                    "strict": B(),
                    "outDir": S(),
                    "rootDir?": S(),
                    "sourceMap": B(),
                    "paths?": O({}, extra=A(S(), lo=1)),
                    "lib": A(S(lo=1), hi=4),
                }
            ),
            "include": A(S(lo=1), lo=1),
            "exclude?": A(S(lo=1)),
        },
        extra=None,
    ),
)
add(
    "scraper_config",
    "Web crawler configuration",
    O(
        {
            "start_urls": A(URI, lo=1, hi=5),
            "allowed_domains": A(S(lo=1), lo=1),
            "max_depth": I(lo=0, hi=10),
            "concurrency": I(lo=1, hi=64),
            "delay_ms": I(lo=0, hi=60000),
            "respect_robots_txt": B(),
            "user_agent": S(lo=1),
            "selectors": O({}, extra=S(lo=1)),
        }
    ),
)
add(
    "secrets_reference",
    "References to secrets in a vault",
    O(
        {
            "provider": E("vault", "aws_secrets_manager", "gcp_secret_manager"),
            "secrets": A(O({"name": S(pattern="^[A-Z_][A-Z0-9_]*$", ex=["DB_PASSWORD", "API_TOKEN"]), "path": S(lo=1), "version?": null(I(lo=1))}), lo=1, hi=5),
            "refresh_interval": DURATION,
        }
    ),
)
add(
    "sla_definition",
    "Service level objectives",
    O(
        {
            "service": S(lo=1),
            "objectives": A(
                O({"name": S(lo=1), "sli": E("availability", "latency_p99", "error_rate"), "target": N(lo=0, hi=100), "window_days": E(7, 28, 30, 90)}),
                lo=1,
                hi=4,
            ),
            "owner_team": S(),
            "pager": maybe(EMAIL),
        }
    ),
)
