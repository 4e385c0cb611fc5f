// The console's stylesheet, served at /console/assets/console.css (no CDN, no web fonts: system fonts).
// Main thread; a constant. Invariant: pages carry no inline style (the CSP allows none), only classes here.
export const CONSOLE_CSS = `
:root{--bg:#f6f7f9;--panel:#fff;--ink:#1b1f24;--muted:#6a7280;--line:#e3e6ea;--accent:#0f6d5f;--accent-ink:#fff;
--ok:#0f7a3d;--ok-bg:#e5f5ea;--bad:#b42318;--bad-bg:#fdecea;--warn:#9a5b00;--warn-bg:#fff4de;--info:#1f5fa8;--info-bg:#e8f0fb;
font:14px/1.45 system-ui,-apple-system,"Segoe UI",Roboto,Ubuntu,sans-serif;color:var(--ink);background:var(--bg)}
*{box-sizing:border-box}body{margin:0;display:flex;min-height:100vh;background:linear-gradient(to right,#14201d 220px,var(--bg) 220px)}
body.bare{background:var(--bg)}
body.bare{justify-content:center;align-items:flex-start;padding-top:10vh}
a{color:var(--accent);text-decoration:none}a:hover{text-decoration:underline}
nav.side{width:220px;flex:none;background:#14201d;color:#d7e2de;padding:18px 14px;display:flex;flex-direction:column;gap:14px;position:sticky;top:0;height:100vh}
nav.side a{color:#d7e2de}.brand{font-weight:700;font-size:18px;display:flex;align-items:center;gap:8px}
.brand small{font-weight:400;color:#8fa9a1;font-size:12px}.logo{display:inline-grid;place-items:center;width:28px;height:28px;border-radius:7px;background:var(--accent);color:#fff}
nav.side ul{list-style:none;margin:0;padding:0;display:flex;flex-direction:column;gap:2px}
nav.side li a{display:block;padding:7px 10px;border-radius:6px}nav.side li a:hover{background:#22332f;text-decoration:none}
nav.side li a[aria-current=page]{background:var(--accent);color:#fff}
.who{margin-top:auto;font-size:12px;color:#a9bbb5;border-top:1px solid #2b3c37;padding-top:12px}.who code{color:#d7e2de;background:#22332f}
.who form{margin-top:8px}
main{flex:1;padding:26px 30px;max-width:1480px;min-width:0}
body.bare main{flex:none;width:420px;background:var(--panel);border:1px solid var(--line);border-radius:12px;padding:28px;box-shadow:0 4px 24px rgba(0,0,0,.06)}
h1{font-size:22px;margin:0 0 18px}h2{font-size:16px;margin:26px 0 10px}
.table-wrap{background:var(--panel);border:1px solid var(--line);border-radius:10px;overflow:auto}
table{border-collapse:collapse;width:100%}th,td{text-align:left;padding:8px 10px;border-bottom:1px solid var(--line);white-space:nowrap;vertical-align:middle}
th{font-size:12px;text-transform:uppercase;letter-spacing:.04em;color:var(--muted);background:#fafbfc;font-weight:600}
tr:last-child td{border-bottom:none}tbody tr:hover{background:#fafcfb}td.num,th.num{text-align:right}td.wrap{white-space:normal}td.data{max-width:460px}td.data code{word-break:break-all;white-space:normal}
code{font:11.5px ui-monospace,SFMono-Regular,Menlo,Consolas,monospace;background:#f0f2f4;padding:1px 5px;border-radius:4px}
.money{font-variant-numeric:tabular-nums;font-weight:600}.money small{font-weight:400;color:var(--muted);margin-left:4px}.money.negative{color:var(--bad)}
.badge{display:inline-block;padding:2px 8px;border-radius:999px;font-size:12px;font-weight:600;background:var(--info-bg);color:var(--info)}
.badge.ok{background:var(--ok-bg);color:var(--ok)}.badge.bad{background:var(--bad-bg);color:var(--bad)}.badge.warn{background:var(--warn-bg);color:var(--warn)}.badge.muted{background:#eef0f2;color:var(--muted)}
.muted{color:var(--muted)}.empty{background:var(--panel);border:1px dashed var(--line);border-radius:10px;padding:28px;text-align:center;color:var(--muted)}
.empty p{margin:0}
.toolbar{display:flex;gap:10px;align-items:end;flex-wrap:wrap;margin-bottom:14px}
label{display:flex;flex-direction:column;gap:4px;font-size:12px;color:var(--muted);font-weight:600}
input,select{font:inherit;padding:7px 10px;border:1px solid #cfd5db;border-radius:7px;background:#fff;color:var(--ink);min-width:0}
input:focus,select:focus{outline:2px solid #9cd3c6;border-color:var(--accent)}
button,.button{font:inherit;font-weight:600;padding:7px 14px;border-radius:7px;border:1px solid var(--accent);background:var(--accent);color:var(--accent-ink);cursor:pointer;display:inline-block}
button:hover,.button:hover{filter:brightness(1.08);text-decoration:none}
button.ghost,.button.ghost{background:#fff;color:var(--accent);border-color:#cfd5db}button.danger{background:#fff;color:var(--bad);border-color:#f0b9b3}
button.small{padding:3px 9px;font-size:12px}form.inline{display:inline-flex;gap:6px;align-items:center;margin:0}
form.stack{display:flex;flex-direction:column;gap:12px}
.pager{display:flex;justify-content:space-between;margin-top:12px}
.flash{padding:10px 14px;border-radius:8px;margin-bottom:16px;font-weight:500}.flash.ok{background:var(--ok-bg);color:var(--ok)}.flash.bad{background:var(--bad-bg);color:var(--bad)}
.cards{display:grid;grid-template-columns:repeat(auto-fill,minmax(240px,1fr));gap:14px;margin-bottom:8px}
.card{background:var(--panel);border:1px solid var(--line);border-radius:10px;padding:14px 16px}.card h3{margin:0 0 6px;font-size:13px;color:var(--muted);font-weight:600}
.card .big{font-size:22px}.card dl{margin:8px 0 0;display:grid;grid-template-columns:auto 1fr;gap:2px 10px;font-size:12px}.card dt{color:var(--muted)}.card dd{margin:0;text-align:right}
dl.facts{display:grid;grid-template-columns:160px 1fr;gap:6px 16px;background:var(--panel);border:1px solid var(--line);border-radius:10px;padding:14px 18px;margin:0}
dl.facts dt{color:var(--muted)}dl.facts dd{margin:0}
.secret{background:#fffbe6;border:1px solid #f1d58a;border-radius:10px;padding:14px 16px;margin-bottom:18px}.secret code{font-size:14px;background:#fff;display:inline-block;padding:6px 10px;margin-top:6px;user-select:all}
.subtitle{color:var(--muted);margin:-12px 0 18px}
`;
