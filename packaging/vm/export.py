#!/usr/bin/env python3
"""Write the VM image in the formats hypervisors import, beside the qcow2 (KVM, Proxmox):

    packaging/vm/export.py build/vm/appliance.qcow2 --version 0.1.0

- appliance.ova: an OVF 1.0 descriptor (appliance.ovf), its manifest (SHA256) and a
  streamOptimized VMDK, in a tar in that order: vSphere/ESXi, Workstation, VirtualBox.
  The hardware is ESXi's: version vmx-19 (ESXi 7.0 U2 and later), guest debian12_64Guest,
  UEFI firmware with Secure Boot, 2 vCPUs, 2 GiB, an LSI Logic SCSI disk, a VMXNET3 NIC.
  Its ProductSection declares the network properties (host name, address, gateway, DNS)
  vSphere asks for on deployment and passes to the guest over VMware Tools
  (com.vmware.guestInfo), where `appliance-console apply-ovf` reads them at boot.
- appliance.vhdx: a dynamic VHDX for Hyper-V (Generation 2: UEFI, Secure Boot with the
  "Microsoft UEFI Certificate Authority" template).

Only the standard library: run as root by `make vm-image` with the system's python3."""

from __future__ import annotations

import argparse
import hashlib
import json
import subprocess
import sys
import tarfile
import tempfile
from pathlib import Path
from xml.sax.saxutils import quoteattr

NAME = "appliance"
CPUS = 2
MEMORY_MIB = 2048
HARDWARE_VERSION = "vmx-19"
GUEST_OS = "debian12_64Guest"  # VMware's id; the OVF's CIM id 96 is "Debian 64-bit" (VirtualBox reads that one)
# OVF properties: key, label, description. Empty values mean DHCP and the image's own host name.
PROPERTIES = [
    ("appliance.hostname", "Host name", "The appliance's host name (empty: appliance)."),
    ("appliance.address", "IPv4 address", "Address with prefix length, e.g. 192.0.2.10/24 (empty: DHCP)."),
    ("appliance.gateway", "Gateway", "IPv4 gateway, with a static address."),
    ("appliance.dns", "DNS servers", "Name servers separated by spaces or commas, with a static address."),
]


def ovf_descriptor(*, version: str, vmdk_name: str, vmdk_size: int, capacity: int, populated: int) -> str:
    """The OVF 1.0 envelope describing the appliance VM and its one disk."""
    properties = "\n".join(
        f"""      <Property ovf:key={quoteattr(key)} ovf:type="string" ovf:userConfigurable="true" ovf:value="">
        <Label>{label}</Label>
        <Description>{description}</Description>
      </Property>"""
        for key, label, description in PROPERTIES
    )
    return f"""<?xml version="1.0" encoding="UTF-8"?>
<Envelope xmlns="http://schemas.dmtf.org/ovf/envelope/1"
    xmlns:ovf="http://schemas.dmtf.org/ovf/envelope/1"
    xmlns:rasd="http://schemas.dmtf.org/wbem/wscim/1/cim-schema/2/CIM_ResourceAllocationSettingData"
    xmlns:vssd="http://schemas.dmtf.org/wbem/wscim/1/cim-schema/2/CIM_VirtualSystemSettingData"
    xmlns:vmw="http://www.vmware.com/schema/ovf"
    xmlns:xsi="http://www.w3.org/2001/XMLSchema-instance">
  <References>
    <File ovf:id="file1" ovf:href={quoteattr(vmdk_name)} ovf:size="{vmdk_size}"/>
  </References>
  <DiskSection>
    <Info>The appliance's disk: its root file system grows to fill a bigger disk at boot</Info>
    <Disk ovf:diskId="vmdisk1" ovf:fileRef="file1" ovf:capacity="{capacity}" ovf:capacityAllocationUnits="byte"
        ovf:populatedSize="{populated}"
        ovf:format="http://www.vmware.com/interfaces/specifications/vmdk.html#streamOptimized"/>
  </DiskSection>
  <NetworkSection>
    <Info>The network the appliance serves on</Info>
    <Network ovf:name="VM Network">
      <Description>SFTP (22), FTP (21), the web console (443, 80 redirects)</Description>
    </Network>
  </NetworkSection>
  <VirtualSystem ovf:id="{NAME}">
    <Info>File-transfer appliance: SFTP, FTP/FTPS and a web console</Info>
    <Name>{NAME}</Name>
    <ProductSection>
      <Info>Network and identity, applied at boot (empty: DHCP)</Info>
      <Product>File-transfer appliance</Product>
      <Vendor>Appliance maintainers</Vendor>
      <Version>{version}</Version>
      <FullVersion>{version}</FullVersion>
      <Category>Network</Category>
{properties}
    </ProductSection>
    <AnnotationSection>
      <Info>How to start</Info>
      <Annotation>The console shows the address to open and the first admin's password once the appliance is ready.</Annotation>
    </AnnotationSection>
    <OperatingSystemSection ovf:id="96" vmw:osType="{GUEST_OS}">
      <Info>The guest operating system</Info>
      <Description>Debian GNU/Linux 12 (64-bit)</Description>
    </OperatingSystemSection>
    <VirtualHardwareSection ovf:transport="com.vmware.guestInfo">
      <Info>Virtual hardware requirements</Info>
      <System>
        <vssd:ElementName>Virtual Hardware Family</vssd:ElementName>
        <vssd:InstanceID>0</vssd:InstanceID>
        <vssd:VirtualSystemIdentifier>{NAME}</vssd:VirtualSystemIdentifier>
        <vssd:VirtualSystemType>{HARDWARE_VERSION}</vssd:VirtualSystemType>
      </System>
      <Item>
        <rasd:AllocationUnits>hertz * 10^6</rasd:AllocationUnits>
        <rasd:Description>Number of virtual CPUs</rasd:Description>
        <rasd:ElementName>{CPUS} virtual CPUs</rasd:ElementName>
        <rasd:InstanceID>1</rasd:InstanceID>
        <rasd:ResourceType>3</rasd:ResourceType>
        <rasd:VirtualQuantity>{CPUS}</rasd:VirtualQuantity>
      </Item>
      <Item>
        <rasd:AllocationUnits>byte * 2^20</rasd:AllocationUnits>
        <rasd:Description>Memory size</rasd:Description>
        <rasd:ElementName>{MEMORY_MIB} MB of memory</rasd:ElementName>
        <rasd:InstanceID>2</rasd:InstanceID>
        <rasd:ResourceType>4</rasd:ResourceType>
        <rasd:VirtualQuantity>{MEMORY_MIB}</rasd:VirtualQuantity>
      </Item>
      <Item>
        <rasd:Address>0</rasd:Address>
        <rasd:Description>SCSI controller</rasd:Description>
        <rasd:ElementName>SCSI controller 0</rasd:ElementName>
        <rasd:InstanceID>3</rasd:InstanceID>
        <rasd:ResourceSubType>lsilogic</rasd:ResourceSubType>
        <rasd:ResourceType>6</rasd:ResourceType>
      </Item>
      <Item>
        <rasd:AddressOnParent>0</rasd:AddressOnParent>
        <rasd:ElementName>Hard disk 1</rasd:ElementName>
        <rasd:HostResource>ovf:/disk/vmdisk1</rasd:HostResource>
        <rasd:InstanceID>4</rasd:InstanceID>
        <rasd:Parent>3</rasd:Parent>
        <rasd:ResourceType>17</rasd:ResourceType>
      </Item>
      <Item>
        <rasd:AddressOnParent>7</rasd:AddressOnParent>
        <rasd:AutomaticAllocation>true</rasd:AutomaticAllocation>
        <rasd:Connection>VM Network</rasd:Connection>
        <rasd:Description>VMXNET3 ethernet adapter on "VM Network"</rasd:Description>
        <rasd:ElementName>Network adapter 1</rasd:ElementName>
        <rasd:InstanceID>5</rasd:InstanceID>
        <rasd:ResourceSubType>VmxNet3</rasd:ResourceSubType>
        <rasd:ResourceType>10</rasd:ResourceType>
      </Item>
      <vmw:Config ovf:required="false" vmw:key="firmware" vmw:value="efi"/>
      <vmw:Config ovf:required="false" vmw:key="bootOptions.efiSecureBootEnabled" vmw:value="true"/>
      <vmw:Config ovf:required="false" vmw:key="tools.syncTimeWithHost" vmw:value="true"/>
      <vmw:Config ovf:required="false" vmw:key="powerOpInfo.powerOffType" vmw:value="soft"/>
      <vmw:Config ovf:required="false" vmw:key="powerOpInfo.resetType" vmw:value="soft"/>
    </VirtualHardwareSection>
  </VirtualSystem>
</Envelope>
"""


def qemu_img_info(path: Path) -> dict:
    result = subprocess.run(["qemu-img", "info", "--output=json", str(path)], check=True, capture_output=True)
    return json.loads(result.stdout)


def convert(source: Path, target: Path, fmt: str, options: str) -> None:
    partial = target.with_name(target.name + ".tmp")
    subprocess.run(["qemu-img", "convert", "-O", fmt, "-o", options, str(source), str(partial)], check=True)
    partial.replace(target)


def write_ova(qcow2: Path, ova: Path, version: str) -> None:
    with tempfile.TemporaryDirectory(dir=ova.parent) as work:
        vmdk = Path(work) / f"{NAME}-disk1.vmdk"
        convert(qcow2, vmdk, "vmdk", "subformat=streamOptimized,adapter_type=lsilogic")
        info = qemu_img_info(qcow2)
        descriptor = ovf_descriptor(
            version=version,
            vmdk_name=vmdk.name,
            vmdk_size=vmdk.stat().st_size,
            capacity=info["virtual-size"],
            populated=info["actual-size"],
        ).encode()
        ovf = Path(work) / f"{NAME}.ovf"
        ovf.write_bytes(descriptor)
        manifest = Path(work) / f"{NAME}.mf"
        manifest.write_text(
            "".join(f"SHA256({path.name})= {hashlib.sha256(path.read_bytes()).hexdigest()}\n" for path in (ovf, vmdk))
        )
        partial = ova.with_name(ova.name + ".tmp")
        # The descriptor first, then the manifest, then the disk: the order OVF 1.0 requires of an OVA
        with tarfile.open(partial, "w", format=tarfile.USTAR_FORMAT) as tar:
            for path in (ovf, manifest, vmdk):
                info = tar.gettarinfo(str(path), arcname=path.name)
                info.uid = info.gid = 0
                info.uname = info.gname = "root"
                info.mode = 0o644
                with path.open("rb") as f:
                    tar.addfile(info, f)
        partial.replace(ova)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("qcow2", type=Path)
    parser.add_argument("--version", required=True)
    args = parser.parse_args()
    out = args.qcow2.parent
    write_ova(args.qcow2, out / f"{NAME}.ova", args.version)
    convert(args.qcow2, out / f"{NAME}.vhdx", "vhdx", "subformat=dynamic")
    for path in (args.qcow2, out / f"{NAME}.ova", out / f"{NAME}.vhdx"):
        print(path)
    return 0


if __name__ == "__main__":
    sys.exit(main())
