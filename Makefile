# The two commands: `make run` and `make test`. `make build` prepares both.
# Everything installs itself on a fresh machine (as root: apt-get for the
# system packages the tests drive; a venv pinned by constraints.txt; npm ci).

# Debian's python3.11: the interpreter the .deb and the VM image run the daemon on (built
# with PGO and LTO, its libpython linked in). A python3 built without them (pyenv's, first
# on this project's machines' PATH) ran the daemon's own Python 35-45% slower, so `make run`
# and bench/run would not have shown the product as it is installed.
PYTHON ?= /usr/bin/python3.11
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed
TOOLS := .venv-tools
TOOLS_STAMP := $(TOOLS)/.installed
# command -> Debian package, for what the tests drive
SYSTEM_TOOLS := sftp:openssh-client sshd:openssh-server scp:openssh-client ssh-keygen:openssh-client sshpass:sshpass lftp:lftp curl:curl dovecot:dovecot-imapd chromium:chromium rclone:rclone systemd-analyze:systemd systemd-socket-activate:systemd lintian:lintian debootstrap:debootstrap psftp:putty-tools sshfs:sshfs wget:wget rsync:rsync systemd-nspawn:systemd-container nsenter:util-linux strace:strace ip:iproute2
# command -> Debian package, for `make deb`
DEB_TOOLS := dpkg-deb:dpkg lintian:lintian
UI_STAMP := appliance/static/index.html
# `apt-get update` once a make run, before its first install: python3.11's venv and headers,
# the tools the tests drive and those of the packages all install through this
# (the mark is this make's own: its process id, and younger than an hour, so a later make
# whose id is the same one updates again)
APT_MARK := /tmp/.appliance-apt-updated.$(shell echo $$PPID)
APT_INSTALL = { [ -n "$$(find $(APT_MARK) -mmin -60 2>/dev/null)" ] || { apt-get update -qq && touch $(APT_MARK); }; } && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq
UI_SOURCES := $(shell find ui/src ui/index.html ui/package.json ui/package-lock.json -type f 2>/dev/null)

.PHONY: run test test-fast build python tools ui system-deps deb-deps lint test-python test-ui bench clean dist deb vm-deps vm-image vm-test upgrade-test

# the daemon says where to open the console once it listens ("Ready: open the console at ...")
run: build
	@echo "Starting the appliance: data in ./var/; it names the console's address when it is up (Ctrl-C stops it)."
	$(BIN)/appliance serve

build: python ui

python: $(STAMP)

$(STAMP): constraints.txt setup.cfg setup.py pyproject.toml appliance/storage/local/_fast.c
	@# the interpreter, its venv module and its headers (for the C module, setup.py)
	@if ! $(PYTHON) -c 'import ensurepip, os, sys, sysconfig; sys.exit(not os.path.exists(sysconfig.get_paths()["include"] + "/Python.h"))' 2>/dev/null; then \
	  if [ "$$(id -u)" != 0 ]; then echo "missing: $(PYTHON) with venv and headers (as root: apt-get install python3.11-venv python3.11-dev)"; exit 1; fi; \
	  echo "installing: python3.11 python3.11-venv python3.11-dev"; \
	  $(APT_INSTALL) python3.11 python3.11-venv python3.11-dev; \
	fi
	@# a venv made by another interpreter (an older checkout's python3) is made again
	if [ -x $(BIN)/python ] && [ "$$(readlink -f $(BIN)/python)" != "$$(readlink -f "$$(command -v $(PYTHON))")" ]; then rm -rf $(VENV); fi
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	@echo "Installing the Python packages into $(VENV) (a minute or two the first time)..."
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(BIN)/python -m pip install --progress-bar on -c constraints.txt -e '.[test]'
	touch $@

# ssh-audit and sslyze, which the tests run against the daemon, in a venv of their own
tools: $(TOOLS_STAMP)

$(TOOLS_STAMP): constraints-tools.txt
	test -x $(TOOLS)/bin/python || $(PYTHON) -m venv $(TOOLS)
	$(TOOLS)/bin/python -m pip install --quiet -c constraints-tools.txt ssh-audit sslyze
	touch $@

ui: $(if $(wildcard ui/package.json),$(UI_STAMP))

ui/node_modules/.package-lock.json: ui/package-lock.json
	cd ui && npm ci --no-audit --no-fund
	touch $@

$(UI_STAMP): ui/node_modules/.package-lock.json $(UI_SOURCES)
	cd ui && npm run build

# $(call need,command:package ...): apt-get installs the packages of the commands that are
# missing (as root); otherwise says which packages to install, and stops
define need
	@missing=""; for pair in $(1); do \
	  command -v $${pair%%:*} >/dev/null 2>&1 || missing="$$missing $${pair#*:}"; done; \
	if [ -n "$$missing" ]; then \
	  if [ "$$(id -u)" != 0 ]; then echo "missing system packages:$$missing (as root: apt-get install$$missing)"; exit 1; fi; \
	  echo "installing:$$missing"; \
	  $(APT_INSTALL) $$missing; \
	fi
endef

system-deps:
	$(call need,$(SYSTEM_TOOLS))

deb-deps:
	$(call need,$(DEB_TOOLS))

lint: python
	$(BIN)/ruff check appliance tests bench bench/run
	$(BIN)/ruff format --check appliance tests bench bench/run
	$(BIN)/lint-imports  # the layers: pyproject.toml [tool.importlinter]

# --durations: the slowest tests, printed at the end of every run (where CI's time goes)
test-python: python tools system-deps ui
	$(BIN)/python -m pytest -q --durations=40

test-ui: ui
	$(if $(wildcard ui/package.json),cd ui && npm test)

test: lint test-ui test-python

# The edit-test loop: lint and the unit tier, the core in the test process (tests/conftest.py's TIERS)
test-fast: lint
	$(BIN)/python -m pytest -q -m "unit and not slow"

bench: build
	bench/run

# A wheel and an sdist in dist/, the built UI inside them as package data;
# setuptools and wheel for the isolated build are pinned by constraints.txt too
dist: ui python
	rm -rf build/lib build/bdist.* dist/appliance-*
	PIP_CONSTRAINT=$(CURDIR)/constraints.txt $(BIN)/python -m build --outdir dist .
	@ls -l dist

# dist/appliance_<version>_<arch>.deb: a venv under /opt/appliance with the wheel (Debian's
# python3.11), /usr/bin/appliance, the user, the data dir, the units, /etc/appliance/appliance.toml
deb: deb-deps dist
	packaging/deb/build.sh dist/appliance-$$($(BIN)/python -c 'import appliance; print(appliance.__version__)')-*.whl dist
	lintian --no-cfg dist/appliance_*.deb

# The VM image (packaging/vm/build.sh and export.py; as root): Debian 12 with the .deb, booting
# with BIOS and UEFI (Secure Boot), as build/vm/appliance.qcow2 (KVM, Proxmox), appliance.ova
# (vSphere/ESXi, Workstation, VirtualBox) and appliance.vhdx (Hyper-V Generation 2); and a test
# that checks each format and boots them in qemu (packaging/vm/test.py). Not part of `make test`.
VM_IMAGE := build/vm/appliance.qcow2
# command or file -> Debian package, for these targets only
VM_TOOLS := debootstrap:debootstrap mkfs.ext4:e2fsprogs sfdisk:fdisk grub-mkimage:grub-pc-bin \
	mkfs.fat:dosfstools mcopy:mtools qemu-img:qemu-utils qemu-system-x86_64:qemu-system-x86 \
	python3.11:python3.11-venv sftp:openssh-client sshpass:sshpass git:git \
	/usr/lib/grub/i386-pc/boot.img:grub-pc-bin /usr/share/OVMF/OVMF_CODE_4M.secboot.fd:ovmf
VERSION = $$($(BIN)/python -c 'import appliance; print(appliance.__version__)')

vm-deps:
	@missing=""; for pair in $(VM_TOOLS); do name=$${pair%%:*}; \
	  case $$name in /*) test -e $$name ;; *) command -v $$name >/dev/null 2>&1 ;; esac || missing="$$missing $${pair#*:}"; done; \
	if [ -n "$$missing" ]; then \
	  if [ "$$(id -u)" != 0 ]; then echo "missing system packages:$$missing (install them as root)"; exit 1; fi; \
	  echo "installing:$$missing"; \
	  $(APT_INSTALL) $$missing; \
	fi

vm-image: vm-deps deb
	packaging/vm/build.sh dist/appliance_$(VERSION)_$$(dpkg --print-architecture).deb $(VM_IMAGE)
	packaging/vm/export.py $(VM_IMAGE) --version $(VERSION)
	@ls -l $(dir $(VM_IMAGE))

vm-test: vm-deps python
	$(BIN)/python packaging/vm/test.py $(VM_IMAGE)

# A real upgrade in a VM: the .deb of an earlier commit (built in a worktree under build/upgrade/),
# filled through the API and SFTP, then dpkg -i of this checkout's .deb (packaging/vm/upgrade_test.py)
UPGRADE_FROM ?= 8bff2f3
upgrade-test: vm-deps deb
	$(BIN)/python packaging/vm/upgrade_test.py --from $(UPGRADE_FROM) --deb dist/appliance_$(VERSION)_$$(dpkg --print-architecture).deb

clean:
	rm -rf $(VENV) $(TOOLS) .venv-bench ui/node_modules ui/.parcel-cache build dist *.egg-info
	find appliance/static -mindepth 1 ! -name .gitkeep -delete
