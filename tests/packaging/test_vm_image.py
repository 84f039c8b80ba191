"""The VM image's pieces that need no boot: the OVF descriptor `make vm-image` puts in the OVA
(valid against the OVF envelope schema, with the hardware ESXi expects), the console menu on
tty1 (network and host name from what an admin types) and the OVF properties vSphere passes.
Booting the image is `make vm-test` (packaging/vm/test.py), not part of `make test`."""

from __future__ import annotations

import importlib.util
import subprocess
import sys
import xml.etree.ElementTree as ET

import pytest

from ..helpers import ROOT

VM = ROOT / "packaging" / "vm"
CONSOLE = VM / "files" / "appliance-console"
OVF = "{http://schemas.dmtf.org/ovf/envelope/1}"
VMW = "{http://www.vmware.com/schema/ovf}"


def load_export():
    spec = importlib.util.spec_from_file_location("vm_export", VM / "export.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


class NotValid(Exception):
    """The descriptor does not hold to the OVF schema (xmlschema's words)."""


# xmlschema runs in a Python of its own: in this one, once Twisted has loaded
# zope.interface's collections.abc declarations, building a schema fails
# ("AttributeError: __provides__" from xmlschema's walk of its classes' attributes)
VALIDATE = """
import sys, xmlschema
try:
    xmlschema.XMLSchema(sys.argv[1]).validate(sys.stdin.read())
except xmlschema.XMLSchemaValidationError as e:
    print(e, file=sys.stderr)
    sys.exit(3)
"""


@pytest.fixture(scope="module")
def schema():
    """A validator of descriptors against packaging/vm/schema/ovf-envelope.xsd."""

    def validate(text: str) -> None:
        path = str(VM / "schema" / "ovf-envelope.xsd")
        result = subprocess.run([sys.executable, "-c", VALIDATE, path], input=text, capture_output=True, text=True)
        if result.returncode == 3:
            raise NotValid(result.stderr)
        assert result.returncode == 0, result.stderr

    return validate


def descriptor(**overrides) -> str:
    values = dict(version="1.2.3", vmdk_name="appliance-disk1.vmdk", vmdk_size=300 << 20, capacity=4 << 30)
    return load_export().ovf_descriptor(**{**values, "populated": 900 << 20, **overrides})


def test_the_ovf_descriptor_is_valid_and_asks_for_what_esxi_runs(schema):
    text = descriptor()
    schema(text)
    root = ET.fromstring(text)
    assert root.find(".//{*}VirtualSystemType").text == "vmx-19"
    os_section = root.find(f".//{OVF}OperatingSystemSection")
    assert os_section.get(f"{VMW}osType") == "debian12_64Guest" and os_section.get(f"{OVF}id") == "96"
    config = {c.get(f"{VMW}key"): c.get(f"{VMW}value") for c in root.iter(f"{VMW}Config")}
    assert config["firmware"] == "efi" and config["bootOptions.efiSecureBootEnabled"] == "true"
    disk = root.find(f".//{OVF}Disk")
    assert disk.get(f"{OVF}capacity") == str(4 << 30) and disk.get(f"{OVF}format").endswith("#streamOptimized")
    (file,) = root.iter(f"{OVF}File")
    assert file.get(f"{OVF}href") == "appliance-disk1.vmdk" and file.get(f"{OVF}size") == str(300 << 20)
    keys = [p.get(f"{OVF}key") for p in root.iter(f"{OVF}Property")]
    assert keys == ["appliance.hostname", "appliance.address", "appliance.gateway", "appliance.dns"]
    assert root.find(f".//{OVF}VirtualHardwareSection").get(f"{OVF}transport") == "com.vmware.guestInfo"


@pytest.mark.parametrize(
    "broken",
    [
        ('ovf:diskId="vmdisk1" ', ""),  # a disk without its id
        ("<rasd:ResourceType>17</rasd:ResourceType>", ""),  # an item without its type
        ("<Info>Virtual hardware requirements</Info>", ""),  # a section without its Info
        ('ovf:size="314572800"', 'ovf:size="big"'),
    ],
)
def test_the_schema_refuses_a_descriptor_missing_what_the_spec_requires(schema, broken):
    text = descriptor()
    assert broken[0] in text
    with pytest.raises(NotValid):
        schema(text.replace(broken[0], broken[1], 1))


def console(root, *args: str, stdin: str = "") -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, str(CONSOLE), "--root", str(root), *args],
        input=stdin,
        capture_output=True,
        text=True,
        timeout=30,
    )


@pytest.fixture
def guest(tmp_path):
    """An image's /etc as build.sh leaves it: DHCP, the host name appliance."""
    (tmp_path / "etc/systemd/network").mkdir(parents=True)
    (tmp_path / "etc/systemd/network/20-wired.network").write_text((VM / "files" / "20-wired.network").read_text())
    (tmp_path / "etc/hostname").write_text("appliance\n")
    (tmp_path / "etc/hosts").write_text("127.0.0.1\tlocalhost\n127.0.1.1\tappliance\n::1\tlocalhost\n")
    return tmp_path


def network(root) -> str:
    return (root / "etc/systemd/network/20-wired.network").read_text()


def test_the_menu_shows_dhcp_and_the_host_name_by_default(guest):
    result = console(guest, "menu", stdin="")
    assert result.returncode == 0, result.stderr
    assert "Host name:    appliance" in result.stdout and "Network:      DHCP" in result.stdout


def test_the_menu_sets_a_static_address_after_refusing_what_cannot_work(guest):
    typed = [
        "2", "192.0.2.10", "",  # no prefix length: refused before the gateway is asked
        "2", "192.0.2.10/24", "198.51.100.1", "",  # a gateway off the network
        "2", "192.0.2.10/24", "192.0.2.1", "192.0.2.53 nameserver",  # a DNS server that is no address
        "2", "192.0.2.10/24", "192.0.2.1", "192.0.2.53, 2001:db8::53",
    ]  # fmt: skip
    result = console(guest, "menu", stdin="\n".join(typed) + "\n")
    assert result.returncode == 0, result.stderr
    assert "Not saved: '192.0.2.10' has no prefix length: type the address with it, e.g. 192.0.2.10/24" in result.stdout
    assert "Not saved: the gateway 198.51.100.1 is outside 192.0.2.0/24" in result.stdout
    assert "Not saved: 'nameserver' is not an IP address" in result.stdout
    assert "Saved and applied: 192.0.2.10/24 via 192.0.2.1" in result.stdout
    assert network(guest).split("[Network]\n")[1] == (
        "Address=192.0.2.10/24\nGateway=192.0.2.1\nDNS=192.0.2.53\nDNS=2001:db8::53\n"
    )
    assert "Network:      static 192.0.2.10/24, gateway 192.0.2.1, DNS 192.0.2.53 2001:db8::53" in result.stdout
    back = console(guest, "menu", stdin="1\n")
    assert "Saved and applied: DHCP" in back.stdout and network(guest).endswith("[Network]\nDHCP=yes\n")


def test_a_network_file_edited_by_hand_is_named_and_replaced_from_the_menu(guest):
    (guest / "etc/systemd/network/20-wired.network").write_text("[Network]\nAddress=192.0.2.300/24\n")
    result = console(guest, "menu", stdin="2\n192.0.2.10/24\n\n\n")
    assert result.returncode == 0, result.stderr
    assert "Network:      /etc/systemd/network/20-wired.network was edited by hand: choose 1 or 2" in result.stdout
    assert "Saved and applied: 192.0.2.10/24" in result.stdout
    assert network(guest).endswith("[Network]\nAddress=192.0.2.10/24\n")


def test_the_menu_sets_the_host_name_and_refuses_one_that_is_not(guest):
    result = console(guest, "menu", stdin="3\nfiles_server\n3\nFiles.Example.com\n7\n")
    assert "Not saved: 'files_server' is not a host name" in result.stdout
    assert "Saved and applied: host name files.example.com" in result.stdout
    assert "'7' is not on the menu: type a number from 1 to 6." in result.stdout
    assert (guest / "etc/hostname").read_text() == "files.example.com\n"
    assert (guest / "etc/hosts").read_text().splitlines()[:2] == [
        "127.0.0.1\tlocalhost",
        "127.0.1.1\tfiles.example.com files",
    ]


def ovf_environment(**properties: str) -> str:
    items = "".join(f'<Property oe:key="{k}" oe:value="{v}"/>' for k, v in properties.items())
    return (
        '<?xml version="1.0" encoding="UTF-8"?>'
        '<Environment xmlns="http://schemas.dmtf.org/ovf/environment/1" '
        'xmlns:oe="http://schemas.dmtf.org/ovf/environment/1" oe:id="appliance">'
        f"<PlatformSection><Kind>VMware ESXi</Kind></PlatformSection><PropertySection>{items}</PropertySection>"
        "</Environment>"
    )


def test_the_ovf_properties_set_the_network_once_and_the_menu_keeps_its_change(guest):
    env = guest / "ovf-env.xml"
    env.write_text(ovf_environment(**{
        "appliance.hostname": "sftp.example.com", "appliance.address": "198.51.100.7/25",
        "appliance.gateway": "198.51.100.1", "appliance.dns": "198.51.100.2",
    }))  # fmt: skip
    assert console(guest, "apply-ovf", "--env", str(env)).returncode == 0
    assert "Address=198.51.100.7/25\nGateway=198.51.100.1\nDNS=198.51.100.2\n" in network(guest)
    assert (guest / "etc/hostname").read_text() == "sftp.example.com\n"
    console(guest, "menu", stdin="1\n")  # the admin goes back to DHCP on the console
    assert console(guest, "apply-ovf", "--env", str(env)).returncode == 0  # the next boot, the same properties
    assert network(guest).endswith("DHCP=yes\n")
    env.write_text(ovf_environment(**{"appliance.hostname": "", "appliance.address": "198.51.100.8/25"}))
    assert console(guest, "apply-ovf", "--env", str(env)).returncode == 0  # vSphere's properties changed
    assert "Address=198.51.100.8/25\n" in network(guest)


def test_ovf_properties_that_cannot_work_change_nothing_and_say_why(guest):
    env = guest / "ovf-env.xml"
    env.write_text(ovf_environment(**{"appliance.address": "198.51.100.7", "appliance.hostname": "ok"}))
    result = console(guest, "apply-ovf", "--env", str(env))
    assert result.returncode == 1
    assert "the OVF properties were not applied: '198.51.100.7' has no prefix length" in result.stderr
    assert network(guest).endswith("DHCP=yes\n")


def test_the_image_sets_the_guests_halt_polling_at_boot(tmp_path):
    """The reactor is Twisted's own: the VM image sets the guest kernel's halt polling
    (README, "Small files on a virtual machine") with a tmpfiles rule, which systemd applies
    at boot: here applied to a stand-in /sys holding the 0 some hosts boot guests with."""
    rule = VM / "files" / "appliance-haltpoll.conf"
    assert '"$HERE/files/appliance-haltpoll.conf" "$ROOT/usr/lib/tmpfiles.d/' in (VM / "build.sh").read_text()
    parameter = tmp_path / "sys" / "module" / "haltpoll" / "parameters" / "guest_halt_poll_ns"
    parameter.parent.mkdir(parents=True)
    parameter.write_text("0\n")
    subprocess.run(["systemd-tmpfiles", f"--root={tmp_path}", "--create", str(rule)], check=True)
    assert parameter.read_text().strip() == "200000"
    parameter.unlink()  # a kernel without the haltpoll governor: nothing is made, nothing fails
    subprocess.run(["systemd-tmpfiles", f"--root={tmp_path}", "--create", str(rule)], check=True)
    assert not parameter.exists()
