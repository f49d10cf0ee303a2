/**
 * The merchant dashboard's one stylesheet, served by the façade at /dashboard/style.css (the pages' CSP allows
 * styles from the façade itself only: `style-src 'self'`, no inline style). Readable without it: the pages are plain
 * semantic HTML. Focus is always visible, for keyboard use.
 */
export const DASHBOARD_STYLESHEET = `*{box-sizing:border-box}
body{font-family:system-ui,-apple-system,"Segoe UI",sans-serif;margin:0;color:#1b1b1b;background:#fafafa;line-height:1.45}
a{color:#0b57d0}
a:focus,button:focus,input:focus,select:focus,summary:focus{outline:3px solid #f0b400;outline-offset:2px}
.skip{position:absolute;left:-999px;top:0;background:#fff;padding:.5rem 1rem}
.skip:focus{left:.5rem}
header{display:flex;flex-wrap:wrap;align-items:center;gap:.5rem 1.5rem;padding:.75rem 1.5rem;background:#1f2a44;color:#fff}
header p{margin:0}
header .brand{font-weight:700;font-size:1.1rem}
header .muted-light{color:#d0d6e2}
nav ul{display:flex;flex-wrap:wrap;align-items:center;gap:.25rem 1.5rem;list-style:none;margin:0;padding:.6rem 1.5rem;background:#e8ecf4}
nav li.sign-out{margin-left:auto}
nav li.sign-out button{padding:.25rem .8rem;font-size:.95rem}
nav a[aria-current="page"]{font-weight:700;color:#1b1b1b;text-decoration:none}
main{max-width:90rem;margin:0 auto;padding:1rem 1.5rem 3rem}
h1{font-size:1.5rem}
h2{font-size:1.15rem;margin:0 0 .5rem}
table{border-collapse:collapse;margin:.5rem 0 1rem;width:100%;background:#fff}
caption{text-align:left;font-weight:600;padding:.3rem 0}
th,td{border:1px solid #c9ced8;padding:.35rem .6rem;text-align:left;vertical-align:top}
thead th{background:#eef1f6}
td.amount{text-align:right;font-variant-numeric:tabular-nums;white-space:nowrap}
dl{display:grid;grid-template-columns:max-content 1fr;gap:.3rem 1rem;margin:.5rem 0 1rem}
dt{color:#555}
dd{margin:0;overflow-wrap:anywhere}
article{background:#fff;border:1px solid #c9ced8;border-radius:4px;padding:1rem;margin:0 0 1rem}
label{display:block;margin:.8rem 0 .25rem;font-weight:600}
input[type=text],input[type=password]{width:100%;max-width:24rem;padding:.45rem;font-size:1rem;border:1px solid #767c88;border-radius:3px}
button{padding:.45rem 1rem;font-size:1rem;border:1px solid #1f2a44;border-radius:3px;background:#1f2a44;color:#fff;cursor:pointer}
form.sign-in button{margin-top:1rem}
pre{background:#f1f3f7;border:1px solid #c9ced8;padding:.75rem;overflow-x:auto}
.notice{background:#e6f4ea;border-left:4px solid #1e8e3e;padding:.5rem .75rem}
.error{background:#fce8e6;border-left:4px solid #c5221f;padding:.5rem .75rem}
.status-failed{color:#a50e0e;font-weight:600}
.status-delivered{color:#137333;font-weight:600}
.status-pending{color:#8a5300;font-weight:600}
.muted{color:#555}
.pages{display:flex;gap:1.5rem}
form.filters{display:flex;flex-wrap:wrap;align-items:flex-end;gap:.5rem 1rem;background:#fff;border:1px solid #c9ced8;border-radius:4px;padding:.5rem 1rem 1rem;margin:0 0 1rem}
form.filters label{margin:.5rem 0 .25rem}
form.filters input[type=text]{width:14rem}
select,input[type=date]{padding:.4rem;font-size:1rem;border:1px solid #767c88;border-radius:3px;background:#fff;max-width:100%}
.filter-actions{display:flex;align-items:center;gap:1rem}
code.data{font-size:.85rem;overflow-wrap:anywhere}
td time{white-space:nowrap}
.error ul{margin:.25rem 0}
.badge{display:inline-block;padding:.1rem .55rem;border-radius:1rem;font-size:.9rem;font-weight:600;border:1px solid currentColor;vertical-align:middle}
.badge-ok{color:#0d5b26;background:#e6f4ea}
.badge-wait{color:#6b4100;background:#fef7e0}
.badge-bad{color:#a50e0e;background:#fce8e6}
.headline{margin:.25rem 0 .5rem}
.headline .big{font-size:1.6rem;font-weight:700;margin-right:.5rem;font-variant-numeric:tabular-nums}
#summary{background:#fff;border:1px solid #c9ced8;border-radius:4px;padding:1rem;margin:0 0 1rem}
ol.steps{list-style:none;padding:0;margin:0 0 1rem;border-left:3px solid #c9ced8}
ol.steps li{padding:.25rem 0 .5rem 1rem;position:relative}
ol.steps li p{margin:.1rem 0}
li.step-failed strong{color:#a50e0e}
li.step-pending strong{color:#6b4100}
ol.timeline{padding-left:1.25rem}
ol.timeline li{margin:0 0 .75rem;overflow-wrap:anywhere}
.scroll{overflow-x:auto;max-width:100%}
form.refund{background:#fff;border:1px solid #c9ced8;border-radius:4px;padding:.5rem 1rem 1rem}
form.refund button{margin-top:.75rem}
form.inline{display:inline-block;margin:.25rem .25rem 0 0}
td.address code,code.address{word-break:break-all}
details pre{white-space:pre-wrap;overflow-wrap:anywhere;max-height:24rem;overflow-y:auto}
form.manage{background:#fff;border:1px solid #c9ced8;border-radius:4px;padding:.5rem 1rem 1rem;margin:0 0 .75rem}
form.manage p{margin:.4rem 0}
#new-secret{font-size:1rem;overflow-wrap:anywhere}
span.ref{font-size:.8rem;overflow-wrap:anywhere}
table.list th,table.list td{padding:.3rem .45rem}
form.filters input.short{width:7rem}
ol.events{list-style:none;padding:0;margin:0 0 1rem}
ol.events li{background:#fff;border:1px solid #c9ced8;border-radius:4px;padding:.4rem .75rem;margin:0 0 .4rem;overflow-wrap:anywhere}
ol.events li p{margin:.1rem 0}
@media (max-width:40rem){main{padding:1rem .75rem 2rem}form.filters input[type=text],form.filters input.short{width:100%}form.filters>div{flex:1 1 100%}header,nav ul{padding-left:.75rem;padding-right:.75rem}dl{grid-template-columns:1fr}dt{margin-top:.4rem}}
`;
