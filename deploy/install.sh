#!/usr/bin/env bash
# Install or upgrade ragd as a systemd service. Idempotent: run it again to upgrade.
#
#   sudo deploy/install.sh                 install the checkout this script is in
#   sudo deploy/install.sh PATH-OR-WHEEL   install that instead (a wheel, sdist or directory);
#                                          the units and config template still come from here
#
# What it does (each step says so as it runs):
#   1. system group and user "ragd" (no login shell, home /var/lib/ragd)
#   2. /var/lib/ragd and /var/cache/ragd (ragd:ragd 0750), /etc/ragd (root:ragd 0750)
#   3. a virtualenv at /opt/ragd/venv (python3 -m venv) and `pip install` of ragd into it
#   4. /etc/ragd/config.toml from deploy/config.production.toml, only if it does not exist;
#      the current template is always written to /etc/ragd/config.toml.example
#   5. ragd.service, ragd-check.service and ragd-check.timer into /etc/systemd/system
#   6. if systemd is running: daemon-reload; then, while /etc/ragd/config.toml is still the
#      template and ragd was never enabled, nothing more: it prints the next steps (edit the
#      config, then enable and start) instead of starting ragd on a config that names the
#      hub models and /srv/docs (an offline host would fail to start, again and again).
#      Otherwise enable ragd + ragd-check.timer and start ragd (restart it if it was
#      running, so an upgrade takes effect)
#
# Environment: PYTHON (default python3, must be 3.11-3.13), PIP_ARGS (extra pip arguments,
# e.g. "--no-index --find-links /srv/wheels" for an offline host).
set -euo pipefail
umask 022

PREFIX=/opt/ragd
VENV=$PREFIX/venv
CONFIG_DIR=/etc/ragd
STATE_DIR=/var/lib/ragd
CACHE_DIR=/var/cache/ragd
UNIT_DIR=/etc/systemd/system
PYTHON=${PYTHON:-python3}
read -r -a PIP_EXTRA <<<"${PIP_ARGS:-}"

HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
REPO=$(dirname "$HERE")
SOURCE=${1:-$REPO}

say() { printf '==> %s\n' "$*"; }
die() { printf 'install.sh: error: %s\n' "$*" >&2; exit 1; }

[[ $(id -u) -eq 0 ]] || die "run as root (sudo $0 $*)"
[[ -e $SOURCE ]] || die "$SOURCE does not exist (expected a wheel, sdist or project directory)"
for f in "$HERE/config.production.toml" "$REPO/systemd/ragd.service" \
    "$REPO/systemd/ragd-check.service" "$REPO/systemd/ragd-check.timer"; do
    [[ -f $f ]] || die "$f is missing: run install.sh from a complete ragd checkout"
done
command -v "$PYTHON" >/dev/null || die "$PYTHON not found: install Python 3.11+ (apt-get install python3 python3-venv)"
"$PYTHON" -c 'import sys; sys.exit(not ((3, 11) <= sys.version_info[:2] < (3, 14)))' \
    || die "$PYTHON is $("$PYTHON" -V 2>&1); ragd needs Python 3.11 to 3.13 (set PYTHON=...)"
"$PYTHON" -c 'import venv, ensurepip' 2>/dev/null \
    || die "$PYTHON cannot create virtualenvs: apt-get install python3-venv"

# 1. user and group -----------------------------------------------------------------------------
NOLOGIN=$(command -v nologin || echo /usr/sbin/nologin)
if getent group ragd >/dev/null; then
    say "group ragd exists"
else
    say "creating system group ragd"
    groupadd --system ragd
fi
if getent passwd ragd >/dev/null; then
    say "user ragd exists"
else
    say "creating system user ragd (home $STATE_DIR, shell $NOLOGIN)"
    useradd --system --gid ragd --home-dir "$STATE_DIR" --no-create-home \
        --shell "$NOLOGIN" --comment "ragd retrieval index daemon" ragd
fi

# 2. directories --------------------------------------------------------------------------------
# systemd creates StateDirectory/CacheDirectory too; doing it here lets `ragd index` run as ragd
# before the first start, and works where systemd is not running.
say "ensuring $STATE_DIR and $CACHE_DIR (ragd:ragd 0750), $CONFIG_DIR (root:ragd 0750)"
install -d -m 0750 -o ragd -g ragd "$STATE_DIR" "$CACHE_DIR"
install -d -m 0750 -o root -g ragd "$CONFIG_DIR"

# 3. virtualenv and package ---------------------------------------------------------------------
install -d -m 0755 "$PREFIX"
if [[ -x $VENV/bin/python ]]; then
    say "re-using virtualenv $VENV ($("$VENV/bin/python" -V 2>&1))"
else
    say "creating virtualenv $VENV with $("$PYTHON" -V 2>&1)"
    "$PYTHON" -m venv "$VENV"
fi
PIP_TARGET=$SOURCE
if [[ -d $SOURCE ]]; then
    # Building in the checkout would leave build/ and *.egg-info there as root, and a stale
    # build/lib can smuggle deleted modules into the next wheel: build from a clean copy.
    BUILD_DIR=$(mktemp -d)
    trap 'rm -rf "$BUILD_DIR"' EXIT
    say "copying $SOURCE to $BUILD_DIR for a clean build"
    tar -C "$SOURCE" --exclude=./.git --exclude=./.venv --exclude=./build --exclude='*.egg-info' \
        --exclude='__pycache__' --exclude='./.*cache' --exclude=./.hypothesis \
        --exclude=./.ragd-data -cf - . | tar -C "$BUILD_DIR" -xf -
    PIP_TARGET=$BUILD_DIR
fi
say "installing ragd from $SOURCE into $VENV"
# --upgrade: an upgrade replaces the installed ragd (and pulls newer dependencies it requires).
"$VENV/bin/python" -m pip install --quiet --upgrade "${PIP_EXTRA[@]}" "$PIP_TARGET"
[[ -x $VENV/bin/ragd ]] || die "pip did not install the ragd command into $VENV/bin"
# The venv links to the interpreter it was made with; user ragd must be able to run it (a
# Python under /root, e.g. pyenv, is not reachable for ragd).
if ! (cd / && runuser -u ragd -- "$VENV/bin/ragd" --help >/dev/null 2>&1); then
    die "user ragd cannot run $VENV/bin/ragd (interpreter: $(readlink -f "$VENV/bin/python")); use a system Python: rm -rf $VENV && PYTHON=/usr/bin/python3 $0 $*"
fi
say "installed: $("$VENV/bin/python" -m pip show ragd 2>/dev/null | sed -n 's/^Version: /ragd /p')"

# 4. configuration ------------------------------------------------------------------------------
# A config.toml that is still a template install.sh wrote (this one, or the one an earlier run
# left as config.toml.example) has not been made the operator's own: step 6 starts nothing then.
CONFIG_IS_TEMPLATE=0
if [[ ! -e $CONFIG_DIR/config.toml ]] \
    || cmp -s "$CONFIG_DIR/config.toml" "$HERE/config.production.toml" \
    || cmp -s "$CONFIG_DIR/config.toml" "$CONFIG_DIR/config.toml.example"; then
    CONFIG_IS_TEMPLATE=1
fi
install -m 0640 -o root -g ragd "$HERE/config.production.toml" "$CONFIG_DIR/config.toml.example"
if [[ -e $CONFIG_DIR/config.toml ]]; then
    say "keeping existing $CONFIG_DIR/config.toml (the new template is config.toml.example)"
else
    say "writing $CONFIG_DIR/config.toml from the template (root:ragd 0640)"
    install -m 0640 -o root -g ragd "$HERE/config.production.toml" "$CONFIG_DIR/config.toml"
fi

# Warn (do not fail) about things the operator has to fix before ragd is useful.
if ! runuser -u ragd -- test -r "$CONFIG_DIR/config.toml"; then
    say "WARNING: user ragd cannot read $CONFIG_DIR/config.toml: chgrp ragd it and chmod 0640"
fi
if [[ ! -d /srv/docs ]] && grep -q '^path = "/srv/docs"' "$CONFIG_DIR/config.toml"; then
    say "NOTE: /srv/docs does not exist yet: put documents there or change [[sources]] path"
fi
watches=$(cat /proc/sys/fs/inotify/max_user_watches 2>/dev/null || echo unknown)
say "fs.inotify.max_user_watches = $watches (one watch per watched directory; see deploy/runbook.md)"

# 5. units --------------------------------------------------------------------------------------
for unit in ragd.service ragd-check.service ragd-check.timer; do
    if cmp -s "$REPO/systemd/$unit" "$UNIT_DIR/$unit"; then
        say "$UNIT_DIR/$unit is up to date"
    else
        say "installing $UNIT_DIR/$unit"
        install -m 0644 "$REPO/systemd/$unit" "$UNIT_DIR/$unit"
    fi
done

# 6. systemd ------------------------------------------------------------------------------------
next_steps() {
    say "next steps (deploy/runbook.md, \"First start\"):"
    say "  1. sudoedit $CONFIG_DIR/config.toml: [[sources]] path = your documents, readable by"
    say "     user ragd; [embedding] and [rerank] model: the Hugging Face ids are downloaded at"
    say "     the first start, so a host without access to huggingface.co needs local copies"
    say "     (model = \"/opt/models/...\") or [rerank] enabled = false"
    say "  2. optional, as user ragd: build the index in the foreground (exit 2 names a bad key):"
    say "     runuser -u ragd -- env RAGD_CONFIG=$CONFIG_DIR/config.toml RAGD_DATA_DIR=$STATE_DIR HF_HOME=$CACHE_DIR/huggingface $VENV/bin/ragd index"
}
if [[ ! -d /run/systemd/system ]]; then
    say "systemd is not running here (no /run/systemd/system, e.g. a container):"
    say "  skipped daemon-reload, enable and start."
    if ((CONFIG_IS_TEMPLATE)); then
        next_steps
    fi
    say "On a systemd host then run:"
    say "  systemctl daemon-reload && systemctl enable --now ragd ragd-check.timer"
    say "Without systemd, run it in the foreground as ragd:"
    say "  runuser -u ragd -- env RAGD_CONFIG=$CONFIG_DIR/config.toml RAGD_DATA_DIR=$STATE_DIR HF_HOME=$CACHE_DIR/huggingface $VENV/bin/ragd serve"
    exit 0
fi
say "systemctl daemon-reload"
systemctl daemon-reload
if ((CONFIG_IS_TEMPLATE)) && ! systemctl is-enabled --quiet ragd.service \
    && ! systemctl is-active --quiet ragd.service; then
    say "NOT starting ragd: $CONFIG_DIR/config.toml is still the template"
    next_steps
    say "  3. systemctl enable --now ragd.service ragd-check.timer"
    exit 0
fi
say "systemctl enable ragd.service ragd-check.timer"
systemctl enable --quiet ragd.service ragd-check.timer
if systemctl is-active --quiet ragd.service; then
    say "ragd was running: systemctl restart ragd (waits for READY=1)"
    systemctl restart ragd.service
else
    say "systemctl start ragd (waits for READY=1; the first start may download the model)"
    systemctl start ragd.service
fi
systemctl start ragd-check.timer
say "done. ragd is $(systemctl is-active ragd.service); logs: journalctl -u ragd -f -o cat"
