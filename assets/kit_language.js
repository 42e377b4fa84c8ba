// <head> script of the teacher's kit (demo/kit/teacher.py head()): a state link's &lang= switches the page to that
// language before anything draws (the header toggle's cookie, then one reload), unless it is already in it. Only
// for a link that names a tab, so a stray &lang= changes nothing else.
(() => {
  const q = new URLSearchParams(location.search), lang = q.get("lang");
  if (!q.get("tab") || !window.plmKitConfig.languages.includes(lang)) return;
  const now = (document.cookie.match(/(?:^|; )plm_lang=([^;]*)/) || [])[1];
  if (now === lang) return;
  document.cookie = `plm_lang=${lang}; path=/; max-age=31536000; SameSite=Lax`;
  if (sessionStorage.getItem("plm-lang-switched") !== location.search) {
    sessionStorage.setItem("plm-lang-switched", location.search);
    location.reload();
  }
})();
