"""How a stdio server's network and secrets enter its command line: values never do.

Both backends, built for a server with ``network`` and ``secrets``: the egress directory
is bound, the command runs under the forwarder, the proxy variables are set, and the
secret's value is in the process environment only (docker: ``-e NAME`` in the argv).
Control: the same server without them has no egress binding, no proxy and no value.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from common.config.mcp import McpServer
from common.config.sandbox import SandboxingConfig
from tools_app.bridge.launch import stdio_launch
from tools_app.egress.mount import FORWARDER_NAME, MOUNT_POINT

VALUE = "svc-value-that-must-stay-out-of-argv-1234"


@pytest.mark.parametrize("sandbox", ["namespace", "docker"])
def test_network_and_secrets_are_wired_and_the_value_stays_out_of_the_argv(
    sandbox: str, tmp_path: Path
) -> None:
    server = McpServer.model_validate(
        {
            "name": "wired", "transport": "stdio", "command": ["/usr/bin/python3", "-V"],
            "sandbox": sandbox, "network": ["127.0.0.1:8080"],
            "secrets": {"SERVICE_TOKEN": "svc"},
        }
    )  # fmt: skip
    config = SandboxingConfig()
    launch = stdio_launch(
        server, workspace=None, config=config, egress_dir=tmp_path,
        secret_env={"SERVICE_TOKEN": VALUE, "LD_PRELOAD": VALUE},
    )  # fmt: skip
    bare = stdio_launch(server, workspace=None, config=config)
    try:
        words = " ".join(launch.argv)
        assert VALUE not in words
        assert launch.env["SERVICE_TOKEN"] == VALUE
        assert "LD_PRELOAD" not in launch.env, "no secret goes into an injection name"
        assert f"{MOUNT_POINT}/{FORWARDER_NAME}" in words and str(tmp_path) in words
        proxy_vars = f"{words} {launch.env}"
        assert "http://127.0.0.1:3128" in proxy_vars
        if sandbox == "docker":
            assert launch.argv[launch.argv.index("--network") + 1] == "none"
            assert "-e SERVICE_TOKEN " in words and "SERVICE_TOKEN=" not in words
            assert "HTTP_PROXY" not in launch.env, "the docker client itself uses no proxy"
        # Control: without them, no egress binding, no proxy, no value.
        bare_words = f"{' '.join(bare.argv)} {bare.env}"
        assert MOUNT_POINT not in bare_words and "3128" not in bare_words
        assert VALUE not in bare_words and "SERVICE_TOKEN" not in bare.env
    finally:
        launch.cleanup()
        bare.cleanup()
