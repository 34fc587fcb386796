# shellcheck shell=bash disable=SC2034  # debian_apt_why is read by the caller
# Shared by the developer scripts that take packages from Debian (the
# development distribution, sid, unless DEBIAN_SUITE names another suite)
# without installing anything into the
# system: a private sources list, state and cache directory under a work
# folder, `apt-get download` into it, and `dpkg -x` into a root folder.
# Source it; the functions return 0 on success, 2 when the registry cannot
# be reached (the reason is in $debian_apt_why), 1 on any other failure.

# debian_apt_setup DIR COMPONENT... : writes DIR/apt/{sources.list,apt.conf},
# exports APT_CONFIG and refreshes the package lists.
debian_apt_setup() {
  local dir=$1; shift
  local comps=${*:-main}
  mkdir -p "$dir/debs" "$dir/apt/state/lists/partial" "$dir/apt/cache/archives/partial"
  printf 'deb [signed-by=/usr/share/keyrings/debian-archive-keyring.gpg] http://deb.debian.org/debian %s %s\n' \
    "${DEBIAN_SUITE:-sid}" "$comps" > "$dir/apt/sources.list"
  cat > "$dir/apt/apt.conf" <<CONF
Dir::Etc::sourcelist "$dir/apt/sources.list";
Dir::Etc::sourceparts "/nonexistent";
Dir::State "$dir/apt/state";
Dir::State::status "$dir/apt/state/status";
Dir::Cache "$dir/apt/cache";
APT::Architecture "amd64";
Debug::NoLocking "1";
Acquire::Retries "1";
Acquire::http::Timeout "20";
CONF
  touch "$dir/apt/state/status"
  export APT_CONFIG=$dir/apt/apt.conf
  if ! apt-get update -qq >"$dir/apt/update.log" 2>&1; then
    debian_apt_why="the Debian registry (${DEBIAN_SUITE:-sid}) is unreachable: $(tail -1 "$dir/apt/update.log")"
    return 2
  fi
}

# debian_apt_download DIR PACKAGE... : the .deb files into DIR/debs
# (files already there are kept; apt-get skips what it has).
debian_apt_download() {
  local dir=$1; shift
  (cd "$dir/debs" && apt-get download -qq "$@" >"$dir/apt/download.log" 2>&1) || {
    debian_apt_why="apt-get download from the Debian registry (${DEBIAN_SUITE:-sid}) failed: $(tail -2 "$dir/apt/download.log" | tr '\n' ' ')"
    return 2
  }
}

# debian_unpack DEBS_DIR ROOT : a fresh ROOT holding every .deb of DEBS_DIR.
debian_unpack() {
  rm -rf "$2"
  mkdir -p "$2"
  local deb
  for deb in "$1"/*.deb; do dpkg -x "$deb" "$2" || return 1; done
}
