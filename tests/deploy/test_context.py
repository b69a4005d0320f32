"""What goes into the console image: the project's source, never local secrets or state."""

from __future__ import annotations

from pathlib import Path

from synthorg_site.console_image.context import source_digest, source_files


def test_the_deployments_settings_and_keys_stay_out_of_the_image(tmp_path: Path) -> None:
    for relative, text in {
        "manage.py": "print()",
        "docker/compose.yaml": "services: {}",
        "docker/console.env.example": "SECRET_KEY=CHANGE-ME",
        "docker/console.env": "SECRET_KEY=the-real-one",
        "docker/nginx/certs/console.key": "PRIVATE KEY",
        "var/secret_key": "local",
        ".venv/bin/python": "",
        "tests/test_x.py": "",
        "common/__pycache__/x.cpython-311.pyc": "",
    }.items():
        (tmp_path / relative).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / relative).write_text(text)
    files = {str(p) for p in source_files(tmp_path)}
    assert files == {"manage.py", "docker/compose.yaml", "docker/console.env.example"}


def test_the_digest_follows_the_source(tmp_path: Path) -> None:
    (tmp_path / "manage.py").write_text("one")
    before = source_digest(source_files(tmp_path), tmp_path)
    assert source_digest(source_files(tmp_path), tmp_path) == before
    (tmp_path / "manage.py").write_text("two")
    assert source_digest(source_files(tmp_path), tmp_path) != before
