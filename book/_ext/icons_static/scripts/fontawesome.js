/* flashbook: this page's icons are drawn by the theme's stylesheet and Font Awesome's woff2 webfonts; Font
   Awesome's 1.49 MB all.min.js, which the theme loads here, is not shipped (book/_ext/flashbook_icons.py). */
