# t/lib/debroot.sh - a Debian 12 root for tests that need a whole system
# (a container image, a booted systemd).  Source it after t/lib/common.sh.
#   debroot_mirror            print the Debian mirror apt uses here
#   debroot_reachable         0 when that mirror answers; otherwise print
#                             why not (for a TAP skip reason)
#   debroot_tar TARBALL PKGS...
#                             TARBALL is (a link to) a Debian 12 minbase
#                             root with PKGS, made once by debootstrap and
#                             cached under /var/cache/decod-test/ (keyed by
#                             the list and the mirror; DECOD_TEST_CACHE
#                             names another folder)
# debootstrap takes minutes, so the root is built once per package list:
# under a lock, in a temporary folder, renamed into place whole, so a run
# cut short leaves no half root and runs side by side build it once.
# Callers unpack their own copy; the cached tarball is never changed.
DEBROOT_CACHE=${DECOD_TEST_CACHE:-/var/cache/decod-test}

debroot_tar() {
	out=$1; shift
	command -v debootstrap >/dev/null 2>&1 ||
	    bail "a Debian root needs debootstrap (examples/install-deps.sh installs it)"
	mirror=$(debroot_mirror)
	pkgs=$(echo "$@" | tr ' ' '\n' | sed '/^$/d' | sort -u | tr '\n' ',' | sed 's/,$//')
	key=$(printf 'bookworm minbase %s %s v2\n' "$mirror" "$pkgs" | sha256sum | cut -c1-16)
	f="$DEBROOT_CACHE/bookworm-minbase-$key.tar"
	mkdir -p "$DEBROOT_CACHE"
	if ! [ -s "$f" ]; then
		(
			flock -w 1800 9 || exit 1
			[ -s "$f" ] && exit 0
			tmp=$(mktemp -d "$DEBROOT_CACHE/build.XXXXXX")
			trap 'rm -rf "$tmp"' EXIT
			echo "# building the cached Debian root $f (debootstrap, once)"
			debootstrap --variant=minbase --include="$pkgs" bookworm \
			    "$tmp/root" "$mirror" >"$tmp/debootstrap.log" 2>&1 ||
			    { tail -20 "$tmp/debootstrap.log" | sed 's/^/#   /'; exit 1; }
			# what debian:12-slim leaves out too: apt's caches, docs,
			# man pages, translations
			r=$tmp/root
			rm -rf "$r/var/cache/apt/archives/"*.deb "$r/var/lib/apt/lists/"* \
			    "$r/debootstrap" "$r/usr/share/doc/"* "$r/usr/share/man/"* \
			    "$r/usr/share/info/"* "$r/usr/share/locale/"*
			tar -C "$r" --numeric-owner --xattrs -cf "$tmp/root.tar" . || exit 1
			sha256sum "$tmp/root.tar" | cut -d' ' -f1 >"$tmp/root.tar.sha256"
			mv "$tmp/root.tar.sha256" "$f.sha256"
			mv "$tmp/root.tar" "$f"
		) 9>"$DEBROOT_CACHE/.lock" || return 1
	fi
	ln -sf "$f" "$out"
}

# debroot_mirror: the Debian mirror apt uses here (deb822 or one-line form)
debroot_mirror() {
	m=$(cat /etc/apt/sources.list.d/*.sources 2>/dev/null |
	    awk '/^URIs:/ {u=$2} /^Suites:/ && / bookworm( |$)/ {print u; exit}')
	[ -n "$m" ] || m=$(cat /etc/apt/sources.list /etc/apt/sources.list.d/*.list 2>/dev/null |
	    awk '$1 == "deb" && $3 == "bookworm" {print $2; exit}')
	echo "${m:-http://deb.debian.org/debian}"
}

# debroot_reachable: the mirror serves bookworm's Release file (what
# debootstrap fetches first); on failure print curl's reason
debroot_reachable() {
	m=$(debroot_mirror)
	err=$(curl -sS -f -o /dev/null --max-time 20 "$m/dists/bookworm/Release" 2>&1) ||
	    { echo "cannot reach the Debian mirror $m (${err:-no answer})"; return 1; }
}

# debroot_runtime_pkgs: the runtime packages of deploy/Dockerfile (its last
# `apt-get install`): what decod links and runs, as the image installs it;
# fails when the list it read lacks libnng1
debroot_runtime_pkgs() {
	p=$(awk '/apt-get install/ {buf=""; on=1} on {buf=buf " " $0}
	    on && /&&/ && !/apt-get install/ {on=0; last=buf} END {print last}' \
	    "$top_srcdir/deploy/Dockerfile" |
	    sed 's/.*--no-install-recommends//; s/&&.*//; s/\\//g')
	echo $p
	case " $p " in *" libnng1 "*) ;; *) return 1 ;; esac
}
