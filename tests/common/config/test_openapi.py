"""A connection's operations from an OpenAPI 3 document at config load: derived, each
classified, changed by overrides, and every problem an error naming what is wrong."""

from __future__ import annotations

import json
from pathlib import Path
from textwrap import dedent

import pytest

from common.config import ConfigError, load_config

DOCUMENT = """
openapi: 3.1.0
info: {title: CRM, version: "1"}
paths:
  /customers:
    parameters: []
    get: {operationId: listCustomers, responses: {}}
    post: {operationId: createCustomer, responses: {}}
    x-internal: true
  /customers/{customer-id}:
    get: {operationId: getCustomer, responses: {}}
    head: {responses: {}}
    options: {responses: {}}
    delete: {operationId: deleteCustomer, responses: {}}
    trace: {responses: {}}
  /customers/search:
    post: {operationId: "search customers", responses: {}}
"""


def _config(
    tmp_path: Path, connection: str, document: str = DOCUMENT, name: str = "crm.yaml"
) -> Path:
    (tmp_path / name).write_text(dedent(document), encoding="utf-8")
    path = tmp_path / "synthorg.yaml"
    head = "connections:\n  - name: crm\n    base_url: https://crm.example.test/v2\n"
    path.write_text(head + connection, encoding="utf-8")
    return path


def _problems(tmp_path: Path, connection: str, document: str = DOCUMENT) -> str:
    with pytest.raises(ConfigError) as caught:
        load_config(_config(tmp_path, connection, document))
    return str(caught.value)


def test_operations_are_derived_and_classified(tmp_path: Path) -> None:
    config = load_config(_config(tmp_path, "    openapi: crm.yaml\n"))
    (connection,) = config.connections
    shown = [(op.label, op.method, op.path, op.resolved_kind) for op in connection.operations]
    assert shown == [
        ("listCustomers", "GET", "/customers", "read"),
        ("createCustomer", "POST", "/customers", "write"),
        ("getCustomer", "GET", "/customers/{customer-id}", "read"),
        ("HEAD /customers/{customer-id}", "HEAD", "/customers/{customer-id}", "read"),
        ("OPTIONS /customers/{customer-id}", "OPTIONS", "/customers/{customer-id}", "read"),
        ("deleteCustomer", "DELETE", "/customers/{customer-id}", "write"),
        # An operationId that is not a valid name leaves the label 'METHOD /path'.
        ("POST /customers/search", "POST", "/customers/search", "write"),
    ]
    # TRACE is never offered; writes ask a person.
    assert all(op.method != "TRACE" for op in connection.operations)
    assert [op.label for op in connection.operations if op.asks_a_person] == [
        "createCustomer",
        "deleteCustomer",
        "POST /customers/search",
    ]


def test_overrides_reclassify_mark_and_switch_off(tmp_path: Path) -> None:
    connection_text = (
        "    openapi: crm.yaml\n"
        '    redact: ["/data/*/ssn"]\n'
        "    operation_overrides:\n"
        '      "post /customers/search": {kind: read, name: searchCustomers}\n'
        "      deleteCustomer: {enabled: false}\n"
        '      getCustomer: {sensitive: true, redact: ["/ssn"]}\n'
    )
    (connection,) = load_config(_config(tmp_path, connection_text)).connections
    by_label = {op.label: op for op in connection.operations}
    assert "deleteCustomer" not in by_label
    assert by_label["searchCustomers"].resolved_kind == "read"
    assert not by_label["searchCustomers"].asks_a_person
    assert by_label["getCustomer"].asks_a_person  # sensitive
    assert connection.redactions(by_label["getCustomer"]) == ("/data/*/ssn", "/ssn")
    # Control: an operation without overrides keeps what the document gave it.
    assert by_label["createCustomer"].resolved_kind == "write"


def test_a_json_document_loads_the_same(tmp_path: Path) -> None:
    document = json.dumps(
        {"openapi": "3.0.0", "paths": {"/ping": {"get": {"operationId": "ping"}}}}
    )
    path = _config(tmp_path, "    openapi: crm.json\n", document, name="crm.json")
    (connection,) = load_config(path).connections
    assert [op.label for op in connection.operations] == ["ping"]


@pytest.mark.parametrize(
    ("connection", "document", "expected"),
    [
        ("    openapi: absent.yaml\n", DOCUMENT, "cannot be read"),
        ("    openapi: crm.yaml\n", "swagger: '2.0'\npaths: {}\n", "must name version 3.x"),
        ("    openapi: crm.yaml\n", "openapi: 3.0.0\npaths: {}\n", "'paths' must be a non-empty"),
        (
            "    openapi: crm.yaml\n",
            "openapi: 3.0.0\npaths: {/a: {fetch: {}}}\n",
            "'fetch' is not an HTTP method",
        ),
        (
            "    openapi: crm.yaml\n",
            "openapi: 3.0.0\npaths: {/a: {$ref: '#/x'}}\n",
            "'$ref' is not followed",
        ),
        (
            "    openapi: crm.yaml\n",
            "openapi: 3.0.0\npaths: {'/a/{b}.json': {get: {}}}\n",
            "enabled: false",
        ),
        ("    openapi: crm.yaml\n", "openapi: [3\n", "neither valid JSON nor YAML"),
        (
            "    openapi: crm.yaml\n    operation_overrides: {nope: {kind: read}}\n",
            DOCUMENT,
            "names no operation of openapi document",
        ),
        (
            "    openapi: crm.yaml\n    operation_overrides: {getCustomer: {kind: maybe}}\n",
            DOCUMENT,
            "operation_overrides['getCustomer']",
        ),
        (
            "    openapi: crm.yaml\n    operations: [{method: GET, path: /x}]\n",
            DOCUMENT,
            "either operations or openapi",
        ),
        (
            "    operations: [{method: GET, path: /x}]\n    operation_overrides: {x: {}}\n",
            DOCUMENT,
            "apply only with openapi",
        ),
        (
            "    openapi: crm.yaml\n    redact: [data/ssn]\n",
            DOCUMENT,
            "must be empty or start with '/'",
        ),
        (
            "    openapi: crm.yaml\n    redact: [/a~2b]\n",
            DOCUMENT,
            "'~' must be followed by 0 or 1",
        ),
    ],
)
def test_a_document_or_override_that_cannot_be_used_is_an_error(
    tmp_path: Path, connection: str, document: str, expected: str
) -> None:
    message = _problems(tmp_path, connection, document)
    assert expected in message, message
    assert message.startswith(str(tmp_path / "synthorg.yaml")), message
    assert "connections[0]" in message, message
