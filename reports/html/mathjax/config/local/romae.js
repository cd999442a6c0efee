MathJax.Hub.Config({"HTML-CSS": {availableFonts: [], webFont: "STIX-Web", imageFont: null},
                    menuSettings: {renderer: "HTML-CSS"}});
MathJax.Ajax.loadComplete("[MathJax]/config/local/romae.js");
