/* The page of `dao view`, embedded at build time from tools/view/ by
   tools/view/embed.cmake (the generated view_assets.c holds the bytes). */
#ifndef DAO_VIEW_ASSETS_H
#define DAO_VIEW_ASSETS_H

#include <stddef.h>

extern const char dao_view_html[];
extern const size_t dao_view_html_size;
extern const char dao_view_css[];
extern const size_t dao_view_css_size;
extern const char dao_view_js[];
extern const size_t dao_view_js_size;

#endif
