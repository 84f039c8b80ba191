"""The VM image's pieces that need no boot: the OVF descriptor `make vm-image` puts in the OVA
(valid against the OVF envelope schema, with the hardware ESXi expects).
Booting the image is `make vm-test` (packaging/vm/test.py), not part of `make test`."""

from __future__ import annotations

import importlib.util
import xml.etree.ElementTree as ET

import pytest
import xmlschema

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


@pytest.fixture(scope="module")
def schema() -> xmlschema.XMLSchema:
    return xmlschema.XMLSchema(str(VM / "schema" / "ovf-envelope.xsd"))


def descriptor(**overrides) -> str:
    values = dict(version="1.2.3", vmdk_name="appliance-disk1.vmdk", vmdk_size=300 << 20, capacity=4 << 30)
    return load_export().ovf_descriptor(**{**values, "populated": 900 << 20, **overrides})


def test_the_ovf_descriptor_is_valid_and_asks_for_what_esxi_runs(schema):
    text = descriptor()
    schema.validate(text)
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
    with pytest.raises(xmlschema.XMLSchemaValidationError):
        schema.validate(text.replace(broken[0], broken[1], 1))
