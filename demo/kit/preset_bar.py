"""The preset bar's browser side (demo/presets.View.buttons): ONE gr.HTML per view, rendered by the browser from
its props, with one "click" event whose value is the preset's slug."""
from __future__ import annotations

from demo.kit.i18n import BROWSER_LANGUAGE_JS
from demo.kit.scripts import script

# A chain-link icon drawn in the text colour: an emoji (🔗) needs a colour-emoji font, which a screenshot machine
# may lack (Debian's headless Chromium drew an empty box).
LINK_ICON = ('<svg width="15" height="15" viewBox="0 0 24 24" fill="none" stroke="currentColor" stroke-width="2.2" '
             'stroke-linecap="round" stroke-linejoin="round" aria-hidden="true">'
             '<path d="M10 13a5 5 0 0 0 7.54.54l3-3a5 5 0 0 0-7.07-7.07l-1.72 1.71"/>'
             '<path d="M14 11a5 5 0 0 0-7.54-.54l-3 3a5 5 0 0 0 7.07 7.07l1.71-1.71"/></svg>')
# The preset bar (assets/preset_bar_template.js), rendered by the browser from its props in its language, and its
# script (assets/preset_bar.js): a button's click sends its slug, a 🔗 click copies its link.
BAR_TEMPLATE = script("preset_bar_template", LANGUAGE=BROWSER_LANGUAGE_JS, LINK_ICON=LINK_ICON)
BAR_JS = script("preset_bar")
