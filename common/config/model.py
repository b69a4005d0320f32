"""``SynthOrgConfig``: the root of the YAML config file."""

from __future__ import annotations

import os
from collections.abc import Mapping
from types import MappingProxyType

from pydantic import Field, field_validator, model_validator

from common.config.analytics import AnalyticsSection
from common.config.browser import BrowserSection
from common.config.communication import CommunicationSection
from common.config.connections import Connection, check_connection_names
from common.config.deployment import DeploymentSection, engine_clash
from common.config.design import GENERATIONS_PATH, DesignSection, offers_generations
from common.config.desktop import DesktopSection
from common.config.notifications import NotificationsSection
from common.config.people import PeopleSection
from common.config.sandbox import SandboxingConfig
from common.config.sections import (
    ApprovalSection,
    AutonomySection,
    McpServer,
    ToolAccessSection,
    ToolSettings,
    check_server_names,
    check_tool_names,
)
from common.config.trust import DisabledTrust, TrustSection
from common.strict import StrictModel
from common.vocabulary.action_types import ActionTypeRegistry
from common.vocabulary.levels import AccessLevelPolicy
from common.vocabulary.names import name_key


class SynthOrgConfig(StrictModel):
    """The whole config; every section has seed defaults, so an empty file is valid."""

    sandboxing: SandboxingConfig = SandboxingConfig()
    tool_access: ToolAccessSection = ToolAccessSection()
    autonomy: AutonomySection = AutonomySection()
    approval: ApprovalSection = ApprovalSection()
    trust: TrustSection = DisabledTrust()
    tools: dict[str, ToolSettings] = Field(default_factory=dict)
    mcp_servers: tuple[McpServer, ...] = ()
    notifications: NotificationsSection = NotificationsSection()
    people: PeopleSection = PeopleSection()
    connections: tuple[Connection, ...] = ()
    # Opt-in: the browser tools are registered only when this section is present.
    browser: BrowserSection | None = None
    # Opt-in: the virtual desktop tools are registered only when this section is present.
    desktop: DesktopSection | None = None
    # Opt-in: send_email and slack_post, each only when its part is present.
    communication: CommunicationSection | None = None
    # Opt-in: chart_render and report_build; metrics_query only with ``metrics``.
    analytics: AnalyticsSection | None = None
    # Opt-in: ci_trigger and ci_status with ``ci``, the container tools with ``containers``.
    deployment: DeploymentSection | None = None
    # Opt-in: mockup_render; image_generate only with ``images``.
    design: DesignSection | None = None

    @field_validator("tools")
    @classmethod
    def _distinct_tools(cls, value: dict[str, ToolSettings]) -> dict[str, ToolSettings]:
        check_tool_names(value)
        return value

    @field_validator("mcp_servers")
    @classmethod
    def _distinct_servers(cls, value: tuple[McpServer, ...]) -> tuple[McpServer, ...]:
        return check_server_names(value)

    @field_validator("connections")
    @classmethod
    def _distinct_connections(cls, value: tuple[Connection, ...]) -> tuple[Connection, ...]:
        return check_connection_names(value)

    @model_validator(mode="after")
    def _slack_connection(self) -> SynthOrgConfig:
        slack = self.communication.slack if self.communication else None
        if slack is not None and self.connection(slack.connection) is None:
            names = ", ".join(c.name for c in self.connections) or "none"
            raise ValueError(
                f"communication.slack.connection {slack.connection!r} names no configured "
                f"connection (connections: {names})"
            )
        return self

    @model_validator(mode="after")
    def _metrics_connection(self) -> SynthOrgConfig:
        metrics = self.analytics.metrics if self.analytics else None
        if metrics is not None and self.connection(metrics.connection) is None:
            names = ", ".join(c.name for c in self.connections) or "none"
            raise ValueError(
                f"analytics.metrics.connection {metrics.connection!r} names no configured "
                f"connection (connections: {names})"
            )
        return self

    @model_validator(mode="after")
    def _images_connection(self) -> SynthOrgConfig:
        images = self.design.images if self.design else None
        if images is None:
            return self
        connection = self.connection(images.connection)
        if connection is None:
            names = ", ".join(c.name for c in self.connections) or "none"
            raise ValueError(
                f"design.images.connection {images.connection!r} names no configured "
                f"connection (connections: {names})"
            )
        if not offers_generations(connection.operations):
            raise ValueError(
                f"design.images.connection {images.connection!r} has no operation "
                f"POST {GENERATIONS_PATH}; add it to the connection's operations"
            )
        return self

    @model_validator(mode="after")
    def _deployment_targets(self) -> SynthOrgConfig:
        ci = self.deployment.ci if self.deployment else None
        if ci is not None:
            connection = self.connection(ci.connection)
            if connection is None:
                names = ", ".join(c.name for c in self.connections) or "none"
                raise ValueError(
                    f"deployment.ci.connection {ci.connection!r} names no configured "
                    f"connection (connections: {names})"
                )
            missing = ci.missing_operations(connection)
            if missing:
                raise ValueError(
                    f"deployment.ci.connection {ci.connection!r} has no operation for "
                    f"{'; '.join(missing)}; add them to the connection's operations"
                )
        containers = self.deployment.containers if self.deployment else None
        if containers is not None:
            clash = engine_clash(
                containers,
                sandbox_docker_host=self.sandboxing.docker.docker_host,
                sandbox_uses_docker=self.uses_docker_sandbox(),
                environ=os.environ,
            )
            if clash is not None:
                raise ValueError(clash)
        return self

    def uses_docker_sandbox(self) -> bool:
        """Whether a tool category or an upstream MCP server runs in the docker backend."""
        return "docker" in self.sandboxing.referenced_backends() or any(
            server.sandbox == "docker" for server in self.mcp_servers
        )

    def connection(self, name: str) -> Connection | None:
        """The connection called ``name``, if configured."""
        return next((c for c in self.connections if c.name == name), None)

    def action_types(self) -> ActionTypeRegistry:
        """Built-in plus custom action types."""
        return self.tool_access.action_type_registry()

    def access_levels(self) -> MappingProxyType[str, AccessLevelPolicy]:
        """The five access levels, for ``trust_app.policy.build_agent_policy``."""
        return self.tool_access.access_levels()

    def tool_settings(self, name: str) -> ToolSettings:
        """Settings for tool ``name`` (case and whitespace folded), or the defaults."""
        key = name_key(name)
        found: Mapping[str, ToolSettings] = {name_key(k): v for k, v in self.tools.items()}
        return found.get(key, ToolSettings())
