#!/usr/bin/env bash
# Create benchmarks/.venv-adapterhub (AdapterHub's `adapters` + transformers 4.57 + adapterlab, editable)
# unless it is already there and complete. Usage: bash benchmarks/setup_venv.sh
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
venv="$here/.venv-adapterhub"
stamp="$venv/.installed"
if [ -f "$stamp" ] && [ "$stamp" -nt "$here/requirements-adapterhub.txt" ]; then
    exit 0  # done before, requirements unchanged
fi
python3 -m venv "$venv"
"$venv/bin/pip" install --quiet -r "$here/requirements-adapterhub.txt"
"$venv/bin/pip" install --quiet --no-deps -e "$here/.."
"$venv/bin/python" -c "import adapters, adapterlab, transformers; print('adapterhub venv: adapters', adapters.__version__, 'transformers', transformers.__version__)"
touch "$stamp"
