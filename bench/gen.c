/*
 * gen - write a deterministic, realistic decofile folder for benchmarks:
 * CMS-like blocks (pages with nested sections, product lists with props,
 * i18n strings in UTF-8, images with unique URLs, numbers), pretty-printed
 * as an editor saves them, with percent-encoded file names and subfolders.
 * The same seed, count and size always give the same bytes.
 *
 *   gen [-s SEED] [-n FILES] [-b BYTES] [-r REUSE%] OUTDIR
 */
#include "config.h"

#include <errno.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "common/util.h"

static uint64_t rng_state;

/* rng - splitmix64: small, seedable, the same on every machine */
static uint64_t
rng(void)
{
	uint64_t z = (rng_state += 0x9e3779b97f4a7c15ULL);

	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
	return z ^ (z >> 31);
}

static unsigned
rn(unsigned n)
{
	return (unsigned)(rng() % n);
}

#define PICK(a) ((a)[rn(sizeof(a) / sizeof((a)[0]))])

static const char *nouns[] = { "Camiseta", "Calça", "Tênis", "Jaqueta", "Vestido",
	"Bermuda", "Óculos", "Relógio", "Mochila", "Boné", "Sandália", "Moletom",
	"Saia", "Blusa", "Bolsa", "Cinto", "Meia", "Chinelo", "Camisa Polo", "Casaco" };
static const char *adjs[] = { "Básica", "Estampada", "Algodão Orgânico", "Clássico",
	"Esportivo", "Confortável", "Coleção Verão", "Edição Limitada", "Slim",
	"Oversized", "Linho", "Jeans", "Couro Legítimo", "Tricô", "Dry-Fit" };
static const char *colors[] = { "Azul", "Preto", "Branco", "Vermelho", "Verde-água",
	"Cinza Mescla", "Marrom", "Rosé", "Bege", "Amarelo Ouro" };
static const char *words[] = { "frete", "grátis", "para", "todo", "o", "Brasil",
	"compre", "agora", "e", "ganhe", "desconto", "na", "primeira", "compra",
	"coleção", "nova", "chegou", "aproveite", "as", "ofertas", "da", "semana",
	"troca", "fácil", "em", "até", "30", "dias", "parcelamento", "sem", "juros",
	"qualidade", "garantida", "entrega", "rápida", "¡oferta!", "envío", "señal",
	"diseño", "niño", "über", "café", "ação", "promoção", "você", "também",
	"pode", "gostar", "destaques", "lançamentos", "mais", "vendidos", "🔥",
	"✨", "日本", "crème", "brûlée", "naïve", "façade" };
static const char *sections[] = { "site/sections/Product/ProductShelf.tsx",
	"site/sections/Images/Carousel.tsx", "site/sections/Content/Faq.tsx",
	"site/sections/Images/BannerGrid.tsx", "site/sections/Content/Logos.tsx",
	"site/sections/Newsletter/Newsletter.tsx", "site/sections/Content/Intro.tsx",
	"site/sections/Product/ProductDetails.tsx", "site/sections/Links/LinkTree.tsx" };
static const char *loaders[] = { "vtex/loaders/intelligentSearch/productList.ts",
	"vtex/loaders/intelligentSearch/productListingPage.ts",
	"shopify/loaders/ProductList.ts", "vtex/loaders/legacy/productList.ts" };
static const char *pagenames[] = { "Home", "Home Page", "Black Friday", "Masculino",
	"Feminino", "Infantil", "Ofertas", "Institucional/Sobre", "Trocas & Devoluções",
	"Página de Produto", "Busca", "Coleção Inverno", "Acessórios", "Lançamentos" };
static const char *langs[] = { "pt-BR", "es", "en", "fr", "de" };

/*
 * Real sites repeat themselves: one asset library, one set of texts, the
 * same shelf or banner on many pages (page variants, A/B tests).  Pools of
 * images and texts, and sections regenerated from a saved generator state,
 * give the generated folder the redundancy real decofiles have.
 */
#define NSAVED 512
static unsigned nimages, ntexts;
static char (*images)[37];
static char **texts;
static uint64_t saved[NSAVED];
static int nsaved;
static unsigned reuse_pct = 40;

static void sentence(char *out, size_t len, int nwords);
static void uuid(char *out);

/* pools_init - pools grow with the square root of the site's size */
static void
pools_init(uint64_t total)
{
	double scale = sqrt((double)total / 4.2e6);
	char buf[512];

	nimages = (unsigned)(600 * scale) + 1;
	ntexts = (unsigned)(3000 * scale) + 1;
	images = xcalloc(nimages, sizeof(*images));
	texts = xcalloc(ntexts, sizeof(*texts));
	for (unsigned i = 0; i < nimages; i++)
		uuid(images[i]);
	for (unsigned i = 0; i < ntexts; i++) {
		sentence(buf, sizeof(buf), 3 + (int)rn(i % 4 == 0 ? 30 : 9));
		texts[i] = xstrdup(buf);
	}
}

/* text - a text from the site's pool */
static const char *
text(void)
{
	return texts[rn(ntexts)];
}

/* a pretty printer (2 spaces), like the admin and editors save blocks */
struct pp {
	struct buf b;
	int depth;
	int first[64];
	int after_key;
};

static void
pp_sep(struct pp *p)
{
	if (p->after_key) {
		p->after_key = 0;
		return;
	}
	if (p->depth > 0) {
		if (!p->first[p->depth])
			buf_addc(&p->b, ',');
		p->first[p->depth] = 0;
		buf_addc(&p->b, '\n');
		for (int i = 0; i < p->depth; i++)
			buf_add(&p->b, "  ", 2);
	}
}

static void
pp_open(struct pp *p, char c)
{
	pp_sep(p);
	buf_addc(&p->b, c);
	p->first[++p->depth] = 1;
}

static void
pp_close(struct pp *p, char c)
{
	int empty = p->first[p->depth];

	p->depth--;
	if (!empty) {
		buf_addc(&p->b, '\n');
		for (int i = 0; i < p->depth; i++)
			buf_add(&p->b, "  ", 2);
	}
	buf_addc(&p->b, c);
}

static void
pp_strv(struct pp *p, const char *s)
{
	pp_sep(p);
	buf_addc(&p->b, '"');
	for (; *s; s++) {
		if (*s == '"' || *s == '\\')
			buf_addc(&p->b, '\\');
		buf_addc(&p->b, *s);
	}
	buf_addc(&p->b, '"');
}

static void
pp_key(struct pp *p, const char *k)
{
	pp_strv(p, k);
	buf_add(&p->b, ": ", 2);
	p->after_key = 1;
}

static void
pp_raw(struct pp *p, const char *s)
{
	pp_sep(p);
	buf_adds(&p->b, s);
}

static void
kv_str(struct pp *p, const char *k, const char *v)
{
	pp_key(p, k);
	pp_strv(p, v);
}

static void
kv_raw(struct pp *p, const char *k, const char *v)
{
	pp_key(p, k);
	pp_raw(p, v);
}

static void
kv_int(struct pp *p, const char *k, long v)
{
	char n[32];

	snprintf(n, sizeof(n), "%ld", v);
	kv_raw(p, k, n);
}

static void
sentence(char *out, size_t len, int nwords)
{
	size_t o = 0;

	out[0] = '\0';
	for (int i = 0; i < nwords && o + 1 < len; i++)
		o += (size_t)snprintf(out + o, len - o, "%s%s", i ? " " : "", PICK(words));
	if (o < len && out[0] >= 'a' && out[0] <= 'z')
		out[0] = (char)(out[0] - 32);
}

static void
uuid(char *out)
{
	uint64_t a = rng(), b = rng();

	snprintf(out, 37, "%08x-%04x-%04x-%04x-%012llx", (unsigned)(a >> 32),
	    (unsigned)(a >> 16) & 0xffff, (unsigned)a & 0xffff,
	    (unsigned)(b >> 48), (unsigned long long)(b & 0xffffffffffffULL));
}

static void
image(struct pp *p, const char *k)
{
	char url[160];
	unsigned i = rn(nimages);

	snprintf(url, sizeof(url),
	    "https://deco-sites-assets.s3.sa-east-1.amazonaws.com/loja/%s/banner-%u.%s",
	    images[i], 100 + i, i % 3 ? "webp" : "png");
	kv_str(p, k, url);
}

static void
product(struct pp *p)
{
	char name[128], sku[32], price[32];
	int nprops = 2 + (int)rn(4);

	snprintf(name, sizeof(name), "%s %s %s", PICK(nouns), PICK(adjs), PICK(colors));
	snprintf(sku, sizeof(sku), "%u", 100000 + rn(900000));
	pp_open(p, '{');
	kv_str(p, "@type", "Product");
	kv_str(p, "productID", sku);
	kv_str(p, "sku", sku);
	kv_str(p, "name", name);
	kv_str(p, "description", text());
	pp_key(p, "image");
	pp_open(p, '[');
	for (int i = 0, n = 1 + (int)rn(3); i < n; i++) {
		pp_open(p, '{');
		kv_str(p, "@type", "ImageObject");
		kv_str(p, "alternateName", name);
		image(p, "url");
		pp_close(p, '}');
	}
	pp_close(p, ']');
	pp_key(p, "offers");
	pp_open(p, '{');
	kv_str(p, "@type", "AggregateOffer");
	snprintf(price, sizeof(price), "%u.%02u", 19 + rn(900), rn(100));
	kv_raw(p, "lowPrice", price);
	snprintf(price, sizeof(price), "%u.90", 30 + rn(1200));
	kv_raw(p, "highPrice", price);
	kv_str(p, "priceCurrency", "BRL");
	kv_int(p, "offerCount", 1 + rn(12));
	pp_close(p, '}');
	pp_key(p, "additionalProperty");
	pp_open(p, '[');
	for (int i = 0; i < nprops; i++) {
		pp_open(p, '{');
		kv_str(p, "@type", "PropertyValue");
		kv_str(p, "name", i % 2 ? "Tamanho" : "Cor");
		kv_str(p, "value", i % 2 ? (rn(2) ? "M" : "GG") : PICK(colors));
		pp_close(p, '}');
	}
	pp_close(p, ']');
	pp_close(p, '}');
}

static void section_new(struct pp *p, int depth);

/* section - a new section, or (often) one the site already shows elsewhere */
static void
section(struct pp *p, int depth)
{
	uint64_t keep;

	if (nsaved > 0 && rn(100) < reuse_pct) {
		keep = rng_state;
		rng_state = saved[rn((unsigned)nsaved)];
		section_new(p, depth);
		rng_state = keep;
		return;
	}
	keep = rng_state;
	section_new(p, depth);
	if (nsaved < NSAVED)
		saved[nsaved++] = keep;
	else
		saved[rn(NSAVED)] = keep;
}

static void
section_new(struct pp *p, int depth)
{
	const char *type = PICK(sections);
	char buf[512];

	pp_open(p, '{');
	if (depth == 0 && rn(3) == 0) {
		kv_str(p, "__resolveType", "website/sections/Rendering/Lazy.tsx");
		pp_key(p, "section");
		section(p, 1);
		pp_close(p, '}');
		return;
	}
	kv_str(p, "__resolveType", type);
	kv_str(p, "title", text());
	if (strstr(type, "Product") != NULL) {
		pp_key(p, "products");
		pp_open(p, '{');
		kv_str(p, "__resolveType", PICK(loaders));
		pp_key(p, "props");
		pp_open(p, '{');
		kv_str(p, "query", PICK(nouns));
		kv_int(p, "count", 4 + rn(20));
		kv_str(p, "sort", rn(2) ? "orders:desc" : "price:asc");
		kv_raw(p, "hideUnavailableItems", rn(2) ? "true" : "false");
		pp_close(p, '}');
		pp_close(p, '}');
		pp_key(p, "layout");
		pp_open(p, '{');
		kv_str(p, "headerAlignment", rn(2) ? "center" : "left");
		kv_str(p, "headerfontSize", "Normal");
		pp_close(p, '}');
	} else if (strstr(type, "Images") != NULL) {
		pp_key(p, "images");
		pp_open(p, '[');
		for (int i = 0, n = 1 + (int)rn(5); i < n; i++) {
			pp_open(p, '{');
			image(p, "desktop");
			image(p, "mobile");
			kv_str(p, "alt", text());
			snprintf(buf, sizeof(buf), "/%s?sale=%u&utm=banner",
			    PICK(pagenames), rn(100));
			kv_str(p, "href", buf);
			pp_close(p, '}');
		}
		pp_close(p, ']');
		kv_raw(p, "preload", rn(2) ? "true" : "false");
		kv_int(p, "interval", 3 + rn(5));
	} else {
		pp_key(p, "items");
		pp_open(p, '[');
		for (int i = 0, n = 2 + (int)rn(5); i < n; i++) {
			pp_open(p, '{');
			kv_str(p, "label", text());
			kv_str(p, "content", text());
			pp_close(p, '}');
		}
		pp_close(p, ']');
	}
	pp_close(p, '}');
}

enum kind { K_PAGE, K_SECTION, K_PRODUCTS, K_I18N, K_SMALL, K_NKINDS };

/* block - one file's content of about target bytes */
static void
block(struct pp *p, enum kind k, const char *title, size_t target)
{
	char buf[512];
	int i = 0;

	pp_open(p, '{');
	switch (k) {
	case K_PAGE:
		kv_str(p, "__resolveType", "website/pages/Page.tsx");
		kv_str(p, "name", title);
		snprintf(buf, sizeof(buf), "/%s", title);
		kv_str(p, "path", buf);
		pp_key(p, "seo");
		pp_open(p, '{');
		kv_str(p, "__resolveType", "website/sections/Seo/SeoV2.tsx");
		kv_str(p, "description", text());
		kv_raw(p, "noIndexing", "false");
		pp_close(p, '}');
		pp_key(p, "sections");
		pp_open(p, '[');
		while (p->b.len < target)
			section(p, 0);
		pp_close(p, ']');
		break;
	case K_SECTION:
		kv_str(p, "__resolveType", PICK(sections));
		kv_str(p, "title", title);
		pp_key(p, "children");
		pp_open(p, '[');
		while (p->b.len < target)
			section(p, 1);
		pp_close(p, ']');
		break;
	case K_PRODUCTS:
		kv_str(p, "__resolveType", PICK(loaders));
		pp_key(p, "props");
		pp_open(p, '{');
		kv_int(p, "count", 12);
		kv_str(p, "collection", title);
		pp_close(p, '}');
		pp_key(p, "fixedProducts");
		pp_open(p, '[');
		while (p->b.len < target)
			product(p);
		pp_close(p, ']');
		break;
	case K_I18N:
		kv_str(p, "locale", title);
		pp_key(p, "strings");
		pp_open(p, '{');
		while (p->b.len < target) {
			char key[64];

			snprintf(key, sizeof(key), "%s.%s.%d", PICK(nouns), PICK(colors), i++);
			kv_str(p, key, text());
		}
		pp_close(p, '}');
		break;
	default:
		kv_str(p, "__resolveType", "site/apps/site.ts");
		kv_str(p, "name", title);
		kv_int(p, "version", rn(1000));
		kv_raw(p, "ratio", "1.50");
		kv_raw(p, "scale", "1e-3");
		pp_key(p, "theme");
		pp_open(p, '{');
		kv_str(p, "primary", "#2E3A59");
		kv_str(p, "font", "Inter, sans-serif");
		pp_close(p, '}');
		while (p->b.len < target) {
			snprintf(buf, sizeof(buf), "link%d", i++);
			pp_key(p, buf);
			pp_open(p, '{');
			kv_str(p, "label", text());
			image(p, "icon");
			pp_close(p, '}');
		}
	}
	pp_close(p, '}');
	buf_addc(&p->b, '\n');
}

/* pct - percent-encode s the way a browser encodes a path segment */
static void
pct(char *out, size_t len, const char *s)
{
	size_t o = 0;

	for (; *s && o + 4 < len; s++) {
		unsigned char c = (unsigned char)*s;

		if ((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
		    (c >= '0' && c <= '9') || c == '-' || c == '_' || c == '.')
			out[o++] = (char)c;
		else
			o += (size_t)snprintf(out + o, len - o, "%%%02X", c);
	}
	out[o] = '\0';
}

static void
usage(void)
{
	fprintf(stderr, "usage: gen [-s SEED] [-n FILES] [-b BYTES] [-r REUSE%%] OUTDIR\n");
	exit(2);
}

int
main(int argc, char **argv)
{
	static const char *dirs[K_NKINDS] = { "pages", "sections", "loaders", "i18n", "" };
	static const double weight[K_NKINDS] = { 1.6, 0.8, 1.4, 2.0, 0.3 };
	unsigned long long seed = 1;
	uint64_t total = 4200000;
	long nfiles = 360;
	double *target, sum = 0, cum = 0;
	enum kind *kinds;
	uint64_t written = 0;
	int c;

	while ((c = getopt(argc, argv, "s:n:b:r:")) != -1) {
		switch (c) {
		case 's': seed = strtoull(optarg, NULL, 10); break;
		case 'n': nfiles = strtol(optarg, NULL, 10); break;
		case 'r': reuse_pct = (unsigned)atoi(optarg); break;
		case 'b':
			if (parse_size(optarg, &total) < 0)
				usage();
			break;
		default: usage();
		}
	}
	if (optind + 1 != argc || nfiles < 1)
		usage();
	rng_state = seed;
	pools_init(total);
	target = xcalloc((size_t)nfiles, sizeof(*target));
	kinds = xcalloc((size_t)nfiles, sizeof(*kinds));
	for (long i = 0; i < nfiles; i++) {
		unsigned r = rn(100);

		kinds[i] = i < 4 ? K_SMALL : i < 8 ? K_I18N : r < 40 ? K_PAGE :
		    r < 75 ? K_SECTION : r < 92 ? K_PRODUCTS : K_SMALL;
		target[i] = weight[kinds[i]] * (0.3 + (double)rn(1000) / 700.0);
		sum += target[i];
	}
	for (long i = 0; i < nfiles; i++) {
		struct pp p;
		char title[128], name[400], path[8192], dir[4096];
		int64_t want;

		memset(&p, 0, sizeof(p));
		buf_init(&p.b);
		if (kinds[i] == K_I18N)
			snprintf(title, sizeof(title), "%s", langs[i % 5]);
		else if (kinds[i] == K_SMALL && i < 4)
			snprintf(title, sizeof(title), "%s",
			    (const char *[]){ "site", "Header", "Footer", "Theme" }[i]);
		else
			snprintf(title, sizeof(title), "%s %ld", PICK(pagenames), i);
		/* aim at the running total, so overshoot of one file is taken back */
		cum += target[i];
		want = (int64_t)(cum / sum * (double)total) - (int64_t)written;
		block(&p, kinds[i], title, want > 200 ? (size_t)want - 100 : 100);

		/* names as the admin saves them: "pages-Home%20Page-12.json", "%2Fblack-friday.json" */
		if (kinds[i] == K_PAGE && i % 5 == 0) {
			char route[128];

			snprintf(route, sizeof(route), "/%s-%ld", PICK(pagenames), i);
			pct(name, sizeof(name), route);
		} else {
			char raw[200];

			snprintf(raw, sizeof(raw), "%s%s%s",
			    kinds[i] == K_SMALL || kinds[i] == K_I18N ? "" : dirs[kinds[i]],
			    kinds[i] == K_SMALL || kinds[i] == K_I18N ? "" : "-", title);
			pct(name, sizeof(name), raw);
		}
		snprintf(dir, sizeof(dir), "%s/%s", argv[optind], dirs[kinds[i]]);
		if (mkdir_p(dir, 0755) < 0) {
			fprintf(stderr, "gen: %s: %s\n", dir, strerror(errno));
			return 1;
		}
		snprintf(path, sizeof(path), "%s/%s.json", dir, name);
		if (write_file_atomic(path, p.b.data, p.b.len, 0644) < 0) {
			fprintf(stderr, "gen: %s: %s\n", path, strerror(errno));
			return 1;
		}
		written += p.b.len;
		buf_free(&p.b);
	}
	fprintf(stderr, "gen: %ld files, %llu bytes in %s\n", nfiles,
	    (unsigned long long)written, argv[optind]);
	free(target);
	free(kinds);
	return 0;
}
