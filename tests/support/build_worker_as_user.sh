#!/usr/bin/env bash
# Runs `wrangler deploy --dry-run` for both Workers (which runs each one's
# [build] command, then bundles and validates the config) as a normal user,
# on what looks to it like a machine without sshd or chromium. Run as root
# by tests/tests/deploy.rs, inside `unshare --mount`, so every mount below
# is this process tree's alone and vanishes with it.
#
# The build must not rebuild what scripts/test built, so the user sees the
# same paths: the clone, the target dir, CARGO_HOME and the tools folder are
# overlays over the real ones (writes land in a scratch folder; the real
# ones are never touched), and /root, where rustup lives here, is opened up
# by a tmpfs that re-mounts just those folders.
#
# Usage: build_worker_as_user.sh REPO TARGET_DIR TOOLS_DIR SCRATCH
set -euo pipefail
repo=$1 target=$2 tools=$3 scratch=$4
user=toolgate-build
cargo_home=${CARGO_HOME:-$HOME/.cargo}
rustup_home=${RUSTUP_HOME:-$HOME/.rustup}
case "$tools" in
  */toolgate/tools) cache_home=${tools%/toolgate/tools} ;;
  *) echo "the tools folder must end in toolgate/tools (install-build-tools' default): $tools" >&2; exit 2 ;;
esac

# Every mount below must vanish with this process tree.
if [ "$(readlink /proc/self/ns/mnt)" = "$(readlink /proc/1/ns/mnt)" ]; then
  echo "run this inside unshare --mount: it mounts over /root and the build folders" >&2
  exit 2
fi
if ! id "$user" >/dev/null 2>&1; then
  useradd --no-create-home --shell /bin/sh "$user"
  trap 'userdel "$user" 2>/dev/null || true' EXIT
fi
uid=$(id -u "$user") gid=$(id -g "$user")
mkdir -p "$scratch/home"
chown "$uid:$gid" "$scratch/home"

# No sshd, no chromium: test tools are not build tools.
for f in /usr/sbin/sshd /usr/bin/chromium; do
  if [ -e "$f" ]; then mount --bind /dev/null "$f"; fi
done

# overlay DIR NAME: DIR becomes writable by the user, copy-on-write. Only
# directories (and cargo's lock files) change owner, so nothing big is
# copied up.
overlay() {
  local dir=$1 name=$2
  mkdir -p "$scratch/$name/upper" "$scratch/$name/work"
  mount -t overlay overlay \
    -o "lowerdir=$dir,upperdir=$scratch/$name/upper,workdir=$scratch/$name/work" "$dir"
  find "$dir" \( -name .git -o -name node_modules -o -path "$repo/target" \) -prune -o -type d -exec chown "$uid:$gid" {} +
  find "$dir" -maxdepth 4 \( -name '.*lock' -o -name '.package-cache*' -o -name .global-cache \) \
    -exec chown "$uid:$gid" {} +
}

# Folders under /root (mode 700 here) stay at their paths behind a tmpfs.
reachable() {
  local dir=$1
  case "$dir" in
    /root/*) ;;
    *) return 0 ;;
  esac
  if [ ! -d "$scratch/root" ]; then
    mkdir -p "$scratch/root"
    mount --bind /root "$scratch/root"
    mount -t tmpfs -o mode=755 tmpfs /root
  fi
  mkdir -p "$dir"
  mount --bind "$scratch/root/${dir#/root/}" "$dir"
}
reachable "$rustup_home"
reachable "$cargo_home"
reachable "$cache_home/toolgate"
# A clone or target dir under /root (CI may put them there) too.
reachable "$repo"
reachable "$target"

overlay "$repo" repo
overlay "$target" target
overlay "$cargo_home" cargo-home
# Up to date first, as root inside the overlays (after scripts/test's own
# Worker build this does nothing): the user then builds a built tree, as a
# deploy after a build does, and what this wrote becomes the user's.
(cd "$repo" && TOOLGATE_TOOLS="$tools" scripts/build-worker >&2)
for pair in "repo:$repo" "target:$target" "cargo-home:$cargo_home"; do
  (cd "$scratch/${pair%%:*}/upper" && find . -mindepth 1 -print0) \
    | (cd "${pair#*:}" && xargs -0 -r chown -h "$uid:$gid")
done
chown -R "$uid:$gid" "$repo/functions/worker/build"

wrangler="$tools/node_modules/.bin/wrangler"
as_user() {
  setpriv --reuid="$uid" --regid="$gid" --clear-groups --inh-caps=-all --bounding-set=-all \
    env -i HOME="$scratch/home" PATH="$cargo_home/bin:/usr/local/bin:/usr/bin:/bin" \
    CARGO_HOME="$cargo_home" RUSTUP_HOME="$rustup_home" CARGO_TARGET_DIR="$target" \
    XDG_CACHE_HOME="$cache_home" WRANGLER_SEND_METRICS=false \
    ${RUSTC_WORKSPACE_WRAPPER:+RUSTC_WORKSPACE_WRAPPER="$RUSTC_WORKSPACE_WRAPPER"} \
    ${CLIPPY_ARGS:+CLIPPY_ARGS="$CLIPPY_ARGS"} \
    "$@"
}
cd "$repo"
# The user makes the Worker's artifacts (Wizer, worker-build, the bundle).
as_user find functions/worker/build -mindepth 1 -delete
echo "== as $(as_user id -un) (uid $uid): sshd $([ -x /usr/sbin/sshd ] && echo present || echo absent), chromium $([ -x /usr/bin/chromium ] && echo present || echo absent)"
as_user "$wrangler" deploy --dry-run --config wrangler.sandbox.toml --outdir "$scratch/home/out-sandbox"
as_user "$wrangler" deploy --dry-run --outdir "$scratch/home/out-dispatcher"
for f in functions/worker/build/sandbox.wasm functions/worker/build/worker/shim.mjs; do
  [ "$(stat -c %u "$f")" = "$uid" ] || { echo "$f was not made by $user" >&2; exit 1; }
done
echo "== built for deploy as $user"
