#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-only
#
# Interactive shell in the vtpu test VM: the same boot as run.sh (host root
# over 9p, the module loaded with its parameters), but the guest runs an
# interactive bash on the serial console instead of a command. Leaving the
# shell (exit / Ctrl-D) unloads the module, checks dmesg and powers off;
# Ctrl-A X kills QEMU at once, Ctrl-A H lists the other console keys.
#
# Usage: tools/vm/shell.sh [--kver V] [--module PATH] [--params "K=V ..."]
#                          [--results DIR] [--build DIR]
# (make vm-shell passes --build, --module and --params.)
exec "$(dirname "${BASH_SOURCE[0]}")/run.sh" --shell "$@"
