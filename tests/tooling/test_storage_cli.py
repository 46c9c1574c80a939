"""``tritonpy publish`` on SeaweedFS's S3 gateway: what it prints, its JSON, its exit statuses (0
published, 1 the store refused, 2 a repository or option that cannot be published)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from tritonpy.cli import main


def repository(root: Path) -> Path:
    for name in ("a", "b"):
        (root / name / "1").mkdir(parents=True)
        (root / name / "1" / "model.py").write_text(f"# {name}\n")
        (root / name / "config.pbtxt").write_text(f'name: "{name}"\nbackend: "python"\n')
    return root


@pytest.fixture
def credentials(s3_bucket: Any, monkeypatch: pytest.MonkeyPatch) -> Any:
    for key, value in s3_bucket.env.items():
        monkeypatch.setenv(key, value)
    return s3_bucket


def test_publish_prints_the_summary_and_a_line_per_model(
    tmp_path: Path, credentials: Any, capsys: pytest.CaptureFixture[str]
) -> None:
    repo, url = repository(tmp_path / "repo"), credentials.url("repo")
    assert main(["publish", str(repo), url]) == 0
    out = capsys.readouterr().out.splitlines()
    assert out[0].startswith(f"published 2 model(s) to {url}: 4 uploaded (")
    assert out[1:] == ["  a: versions in the bucket: 1", "  b: versions in the bucket: 1"]
    assert credentials.keys("repo/") == [
        "repo/a/1/model.py",
        "repo/a/config.pbtxt",
        "repo/b/1/model.py",
        "repo/b/config.pbtxt",
    ]

    (repo / "a" / "1" / "model.py").write_text("# a, version 2\n")
    argv = ["publish", str(repo), url, "--model", "a", "--new-version", "--keep-versions", "1"]
    assert main([*argv, "--dry-run"]) == 0
    assert capsys.readouterr().out.splitlines()[1:] == [
        "  a: new version 2, versions in the bucket: 2",
        "  upload a/2/model.py",
        "  delete a/1/model.py",
    ]
    assert "repo/a/2/model.py" not in credentials.keys("repo/")
    assert main([*argv, "--json"]) == 0
    result = json.loads(capsys.readouterr().out)
    assert (result["uploaded"], result["deleted"]) == (["a/2/model.py"], ["a/1/model.py"])
    assert (result["versions"], result["new_versions"]) == ({"a": [2]}, {"a": 2})
    assert result["unchanged"] == ["a/config.pbtxt"] and result["dry_run"] is False


def test_exit_statuses_name_what_failed(
    tmp_path: Path, credentials: Any, capsys: pytest.CaptureFixture[str]
) -> None:
    repo = repository(tmp_path / "repo")
    # 2: nothing can be published as it is (nothing was uploaded)
    assert main(["publish", str(tmp_path / "repo" / "a"), credentials.url("x")]) == 2
    assert capsys.readouterr().err.startswith(
        f"tritonpy: error: {repo / 'a'} is a model folder (it holds config.pbtxt)"
    )
    assert main(["publish", str(repo), credentials.url("x"), "--keep-versions", "0"]) == 2
    assert "expected 1 or more" in capsys.readouterr().err
    assert main(["publish", str(repo), "s3://http://host/bucket/x"]) == 2
    assert "the endpoint 'host' has no port" in capsys.readouterr().err
    # 1: the store answered with an error
    gone = f"{credentials.name}-gone"  # the bucket's own name first: a store's policy allows it
    missing = f"s3://{credentials.endpoint}/{gone}/x"
    assert main(["publish", str(repo), missing]) == 1
    assert capsys.readouterr().err == (
        f"tritonpy: error: cannot list {missing}: bucket '{gone}' does not exist at "
        f"http://{credentials.endpoint}. Create it first (aws s3 mb), or fix the bucket's name "
        "in the URL.\n"
    )
    assert credentials.keys() == []
