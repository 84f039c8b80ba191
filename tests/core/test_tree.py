"""Confinement of paths inside a home folder, on a real folder."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from appliance.errors import Invalid, NotFound, PermissionDenied
from appliance.storage.local import tree as tree_module
from appliance.storage.local.tree import Tree, sweep_uploads
from appliance.storage.paths import TEMP_PREFIX, Entry, split_path


@pytest.fixture
def tree(tmp_path):
    home = tmp_path / "source" / "alice"
    (home / "docs").mkdir(parents=True)
    (home / "docs" / "a.txt").write_text("inside")
    (tmp_path / "source" / "bob").mkdir()
    (tmp_path / "source" / "bob" / "secret.txt").write_text("bob's")
    (tmp_path / "outside.txt").write_text("host file")
    return Tree(str(home))


@pytest.mark.parametrize(
    "path,expected",
    [
        ("/", []),
        ("", []),
        ("docs/a.txt", ["docs", "a.txt"]),
        ("/docs/./a.txt", ["docs", "a.txt"]),
        ("//docs//a.txt", ["docs", "a.txt"]),
        ("/docs/../docs/a.txt", ["docs", "a.txt"]),
        ("/docs/..", []),
    ],
)
def test_paths_are_normalised(path, expected):
    assert split_path(path) == expected


@pytest.mark.parametrize("path", ["..", "/..", "../etc/passwd", "/docs/../../bob", "/a/b/../../../x"])
def test_dot_dot_past_the_root_is_refused(path):
    with pytest.raises(PermissionDenied, match="outside your home"):
        split_path(path)


@pytest.mark.parametrize(
    "path,message",
    [
        ("/a\x00b", "NUL"),
        ("/evil\r\nname.txt", "control characters"),
        ("/tab\there", "control characters"),
        ("/" + "x" * 256, "too long"),
        ("/" + "é" * 128, "too long"),  # 256 bytes in UTF-8
        ("/" + "/".join(["d" * 200] * 21), "too long"),
        (f"/{TEMP_PREFIX}1234", "reserved"),
    ],
)
def test_bad_names_are_refused(path, message):
    with pytest.raises(Invalid, match=message):
        split_path(path)


def test_a_name_of_255_bytes_is_fine():
    assert split_path("/" + "x" * 255) == ["x" * 255]


def test_absolute_host_paths_stay_inside(tree):
    # "/etc/passwd" is the home's etc/passwd, which does not exist.
    with pytest.raises(NotFound):
        tree.stat(split_path("/etc/passwd"))


def test_symlink_to_outside_is_refused(tree, tmp_path):
    os.symlink("/etc", os.path.join(tree.root, "etc-link"))
    os.symlink(str(tmp_path / "outside.txt"), os.path.join(tree.root, "file-link"))
    os.symlink("../bob", os.path.join(tree.root, "sibling"))
    for path in ("/etc-link/passwd", "/etc-link", "/file-link", "/sibling/secret.txt", "/sibling"):
        with pytest.raises(PermissionDenied, match="outside your home"):
            tree.stat(split_path(path))
    with pytest.raises(PermissionDenied):
        tree.list(split_path("/etc-link"))


def test_symlink_inside_is_followed(tree):
    os.symlink("docs", os.path.join(tree.root, "docs-link"))
    os.symlink("/docs/../docs/a.txt".replace("/docs", tree.root + "/docs", 1), os.path.join(tree.root, "abs-link"))
    assert tree.stat(split_path("/docs-link/a.txt")).size == len("inside")
    assert tree.stat(split_path("/abs-link")).size == len("inside")
    assert [e.name for e in tree.list(split_path("/docs-link"))] == ["a.txt"]


def test_symlink_loops_end(tree):
    os.symlink("loop2", os.path.join(tree.root, "loop1"))
    os.symlink("loop1", os.path.join(tree.root, "loop2"))
    with pytest.raises(PermissionDenied, match="symbolic links"):
        tree.stat(split_path("/loop1/x"))


def test_listing_shows_outside_links_as_links_only(tree):
    os.symlink("/etc/passwd", os.path.join(tree.root, "passwd"))
    entries = {e.name: e for e in tree.list([])}
    assert entries["passwd"].kind == "link"
    assert entries["passwd"].size == 0  # nothing about the host file leaks
    assert entries["docs"].kind == "dir"


def test_a_folder_swapped_for_a_link_during_use_cannot_lead_out(tree, tmp_path):
    # Hold a location open in docs/, then swap docs for a link to outside: the
    # open descriptor still points at the real docs folder.
    location = tree.locate(split_path("/docs/a.txt"))
    try:
        os.rename(os.path.join(tree.root, "docs"), os.path.join(tree.root, "docs-real"))
        os.symlink(str(tmp_path), os.path.join(tree.root, "docs"))
        assert os.stat("a.txt", dir_fd=location.dir_fd).st_size == len("inside")
        with pytest.raises(FileNotFoundError):
            os.stat("outside.txt", dir_fd=location.dir_fd)
    finally:
        location.close()
    with pytest.raises(PermissionDenied):
        tree.stat(split_path("/docs/outside.txt"))


def test_names_with_control_characters_on_the_disk_are_not_listed(tree):
    for name in ["evil\r\n226 Transfer complete.txt", "line\nbreak.txt", "tab\there.txt", "del\x7f.txt"]:
        Path(os.path.join(tree.root, "docs", name)).write_text("planted")
    assert [e.name for e in tree.list(["docs"])] == ["a.txt"]


def test_sorted_names_and_their_entries_are_what_list_lists(tree):
    """A listing sent in batches (the names sorted in one read, then stat'ed a batch at
    a time) shows what `list` shows: no upload in progress, no name with a control
    character, links as `list` shows them, in name order."""
    docs = os.path.join(tree.root, "docs")
    for name in ["b.txt", "Z.txt", "été.txt", "evil\r\nname.txt", TEMP_PREFIX + "abcd"]:
        Path(docs, name).write_text(name)
    os.mkdir(os.path.join(docs, "sub"))
    os.symlink("a.txt", os.path.join(docs, "link"))
    os.symlink("/etc/passwd", os.path.join(docs, "out"))
    names = tree.sorted_names(["docs"])
    assert list(names) == sorted(e.name for e in tree.list(["docs"]))
    assert list(names) == ["Z.txt", "a.txt", "b.txt", "link", "out", "sub", "été.txt"]

    def seen(entries):  # all but the access time
        return [(e.name, e.kind, e.size, e.mtime, e.mode) for e in entries]

    assert seen(tree.entries(["docs"], names)) == seen(sorted(tree.list(["docs"]), key=lambda e: e.name))


def test_the_c_module_makes_the_entries_os_lstat_makes(tree, monkeypatch):
    """`entries` with the C module (_fast.c) and without it (os.lstat, name by name): the
    same entries, to the last bit of their times, for every kind of name a folder can
    hold, and a name gone between the read of the names and their stat left out."""
    if tree_module.lstat_files is None:
        pytest.skip("the C module is not built here (setup.py builds it where a compiler is)")
    docs = os.path.join(tree.root, "docs")
    for i, (size, ns) in enumerate([(0, 0), (1, 999_999_999), (4096, 1_700_000_000_123_456_789), (10**10, -1)]):
        path = os.path.join(docs, f"f{i}.bin")
        with open(path, "wb") as f:
            f.truncate(size)  # sparse: 10 GB costs nothing
        if ns >= 0:
            os.utime(path, ns=(ns + 7, ns))
    os.chmod(os.path.join(docs, "f1.bin"), 0o4751)
    os.close(os.open(os.path.join(os.fsencode(docs), b"caf\xe9.txt"), os.O_CREAT | os.O_WRONLY))
    os.mkdir(os.path.join(docs, "sub"))
    os.symlink("a.txt", os.path.join(docs, "link"))
    os.symlink("/etc/passwd", os.path.join(docs, "out"))
    os.symlink("nowhere", os.path.join(docs, "dangling"))
    os.mkfifo(os.path.join(docs, "pipe"))
    names = (*tree.sorted_names(["docs"]), "gone.txt")
    assert "caf\udce9.txt" in names  # not UTF-8 on the disk: its bytes, as os.listdir gives them

    native = tree.entries(["docs"], names)
    monkeypatch.setattr(tree_module, "lstat_files", None)
    by_python = tree.entries(["docs"], names)
    # a link's access time moves as it is followed (readlink): compared for the rest
    assert [e if e.kind == "file" else e._replace(atime=0) for e in native] == [
        e if e.kind == "file" else e._replace(atime=0) for e in by_python
    ]
    assert [type(e) for e in native] == [Entry] * len(names[:-1])
    assert [e.name for e in native] == list(names[:-1])
    kinds = {e.name: e.kind for e in native}
    assert [kinds[name] for name in ("sub", "link", "out", "pipe", "f3.bin")] == [
        "dir",
        "file",
        "link",
        "other",
        "file",
    ]
    files = {e.name: e for e in native}
    assert files["f3.bin"].size == 10**10 and files["f2.bin"].mtime == 1_700_000_000.1234567
    assert files["f1.bin"].mode == 0o100751  # no set-user-ID bit shown (ENTRY_MODE)


def test_the_c_module_is_built_where_the_tests_run_in_ci():
    """setup.py builds it optional (a machine without a compiler still installs the
    package); CI has one, and a build that lost the module would list slower unseen."""
    if not os.environ.get("CI") and tree_module.lstat_files is None:
        pytest.skip("the C module is not built here, and CI is not set")
    assert tree_module.lstat_files is not None


def test_upload_temp_files_are_hidden_and_swept(tree):
    temp = os.path.join(tree.root, "docs", TEMP_PREFIX + "abcd")
    Path(temp).write_text("partial")
    assert [e.name for e in tree.list(["docs"])] == ["a.txt"]
    assert tree.usage() == (len("inside"), 1)
    assert sweep_uploads(tree.root) == 1
    assert not os.path.exists(temp)
