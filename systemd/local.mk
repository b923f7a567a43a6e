# systemd/: how decod is installed.  `make install` puts decod in sbin,
# decoctl in bin (cli/local.mk), the stages in $(libexecdir)/decod (their
# fragments), and from here: the systemd units, sysusers.d and tmpfiles.d
# entries, the man pages decod(8) and decod.conf(5), and the commented
# sample config (never a real decod.conf over an existing one).  The units
# are made from systemd/*.in by sed so their paths are ./configure's.

# Where units go: systemd also reads $(prefix)/lib/systemd/system for
# prefix /usr/local.  Override at install time if a distribution wants
# another place: make install systemdsystemunitdir=/lib/systemd/system
systemdsystemunitdir = $(prefix)/lib/systemd/system
sysusersdir = $(prefix)/lib/sysusers.d
tmpfilesdir = $(prefix)/lib/tmpfiles.d
decodconfdir = $(sysconfdir)/decod

DECOD_STAGE_UNITS = systemd/decod-fetcher.service systemd/decod-renderer.service \
	systemd/decod-publisher.service systemd/decod-notifier.service \
	systemd/decod-webhook.service systemd/decod-acl.service systemd/decod-web.service
systemdsystemunit_DATA = systemd/decod.service $(DECOD_STAGE_UNITS) \
	systemd/decod-stages.target
# installed under the name decod.conf (install-data-hook below)
noinst_DATA = systemd/sysusers.conf systemd/tmpfiles.conf
decodconf_DATA = etc/decod.conf.sample
dist_man_MANS += doc/decod.8 doc/decod.conf.5
CLEANFILES += systemd/decod.service $(DECOD_STAGE_UNITS) \
	systemd/sysusers.conf systemd/tmpfiles.conf
EXTRA_DIST += systemd/decod.service.in systemd/decod-stage.service.in \
	systemd/decod-stages.target systemd/sysusers.conf.in systemd/tmpfiles.conf.in \
	etc/decod.conf.sample doc/operations.md \
	deploy/README.md deploy/Dockerfile deploy/kustomization.yaml \
	deploy/namespace.yaml deploy/crd-decofile.yaml deploy/crd-decofiletemplate.yaml \
	deploy/rbac.yaml deploy/configmap.yaml deploy/deployment.yaml \
	deploy/webhook/kustomization.yaml deploy/webhook/service.yaml \
	deploy/webhook/mutating.yaml deploy/webhook/validating.yaml \
	deploy/webhook/certificate.yaml deploy/webhook/deployment-patch.yaml

# the paths the units name, after make has expanded ${prefix} and friends
decod_subst = sed -e 's|@sbindir[@]|$(sbindir)|g' \
	-e 's|@bindir[@]|$(bindir)|g' \
	-e 's|@libexecdir[@]|$(libexecdir)|g' \
	-e 's|@sysconfdir[@]|$(sysconfdir)|g' \
	-e 's|@localstatedir[@]|$(localstatedir)|g' \
	-e 's|@runstatedir[@]|$(runstatedir)|g'

systemd/decod.service: $(srcdir)/systemd/decod.service.in Makefile
	$(AM_V_GEN)$(MKDIR_P) systemd && $(decod_subst) \
	    $(srcdir)/systemd/decod.service.in >$@.tmp && mv $@.tmp $@
$(DECOD_STAGE_UNITS): $(srcdir)/systemd/decod-stage.service.in Makefile
	$(AM_V_GEN)$(MKDIR_P) systemd && stage=`basename $@ .service | sed 's/^decod-//'` && \
	    $(decod_subst) -e "s|@stage[@]|$$stage|g" \
	    $(srcdir)/systemd/decod-stage.service.in >$@.tmp && mv $@.tmp $@
systemd/sysusers.conf: $(srcdir)/systemd/sysusers.conf.in Makefile
	$(AM_V_GEN)$(MKDIR_P) systemd && $(decod_subst) \
	    $(srcdir)/systemd/sysusers.conf.in >$@.tmp && mv $@.tmp $@
systemd/tmpfiles.conf: $(srcdir)/systemd/tmpfiles.conf.in Makefile
	$(AM_V_GEN)$(MKDIR_P) systemd && $(decod_subst) \
	    $(srcdir)/systemd/tmpfiles.conf.in >$@.tmp && mv $@.tmp $@

# systemd/decod-stages.target needs no substitution; in an out-of-tree
# build it is read from $(srcdir) (automake's VPATH finds it).

# sysusers.d and tmpfiles.d entries are named decod.conf; the real
# decod.conf is made from the sample only where none exists yet, so an
# install never overwrites an operator's settings (every line of the
# sample is a comment: that file means "all defaults").
install-data-hook: install-decod-data
install-decod-data:
	$(MKDIR_P) '$(DESTDIR)$(sysusersdir)' '$(DESTDIR)$(tmpfilesdir)'
	$(INSTALL_DATA) systemd/sysusers.conf '$(DESTDIR)$(sysusersdir)/decod.conf'
	$(INSTALL_DATA) systemd/tmpfiles.conf '$(DESTDIR)$(tmpfilesdir)/decod.conf'
	@if test -f '$(DESTDIR)$(decodconfdir)/decod.conf'; then \
	    echo "keeping $(DESTDIR)$(decodconfdir)/decod.conf"; \
	else \
	    echo " $(INSTALL_DATA) $(srcdir)/etc/decod.conf.sample '$(DESTDIR)$(decodconfdir)/decod.conf'"; \
	    $(INSTALL_DATA) $(srcdir)/etc/decod.conf.sample '$(DESTDIR)$(decodconfdir)/decod.conf'; \
	fi
uninstall-hook: uninstall-decod-data
uninstall-decod-data:
	rm -f '$(DESTDIR)$(sysusersdir)/decod.conf' '$(DESTDIR)$(tmpfilesdir)/decod.conf'
	@if cmp -s $(srcdir)/etc/decod.conf.sample '$(DESTDIR)$(decodconfdir)/decod.conf'; then \
	    echo " rm -f '$(DESTDIR)$(decodconfdir)/decod.conf'"; \
	    rm -f '$(DESTDIR)$(decodconfdir)/decod.conf'; \
	fi

# the install test asks make where things go (expanded, one name=value a line)
print-install-dirs:
	@echo prefix='$(prefix)'; echo bindir='$(bindir)'; echo sbindir='$(sbindir)'
	@echo libexecdir='$(libexecdir)'; echo sysconfdir='$(sysconfdir)'
	@echo localstatedir='$(localstatedir)'; echo runstatedir='$(runstatedir)'
	@echo mandir='$(mandir)'; echo systemdsystemunitdir='$(systemdsystemunitdir)'
	@echo sysusersdir='$(sysusersdir)'; echo tmpfilesdir='$(tmpfilesdir)'
	@echo decodconfdir='$(decodconfdir)'; echo pkgdatadir='$(pkgdatadir)'
.PHONY: install-decod-data uninstall-decod-data print-install-dirs

TESTS += t/integration/install.sh
EXTRA_DIST += t/integration/install.sh
# the units booted under a real systemd (systemd-nspawn on a debootstrap root)
TESTS += t/integration/systemd_boot.sh
EXTRA_DIST += t/integration/systemd_boot.sh t/lib/debroot.sh
