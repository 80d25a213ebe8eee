#include <array>
#include <cstddef>
#include <string_view>

#include "tools/rtcosimd/web_server.hpp"

namespace rtcosim::daemon {

namespace {

// The head carries all the style: no stylesheet to fetch over the operator's tunnel.
constexpr std::string_view page_head() {
  return R"HTML(<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8"><title>rtcosimd live view</title>
<meta name="viewport" content="width=device-width, initial-scale=1">
<style>
body{font:13px/1.4 system-ui,sans-serif;margin:0;background:#f7f7f9;color:#222}
header{background:#1f2d3d;color:#fff;padding:8px 16px;display:flex;gap:24px;align-items:center}
header b{font-size:15px} #state{padding:2px 8px;border-radius:4px;background:#555}
#state.run{background:#2a7d2a} #state.stop{background:#a33}
main{display:grid;grid-template-columns:1fr 1fr;gap:12px;padding:12px}
section{background:#fff;border:1px solid #ddd;border-radius:6px;padding:8px 12px;overflow:auto}
section.wide{grid-column:1/3} h2{font-size:14px;margin:4px 0 8px}
table{border-collapse:collapse;width:100%} th,td{padding:2px 8px;text-align:right;white-space:nowrap}
th:first-child,td:first-child{text-align:left} tr:nth-child(even){background:#f3f5f8}
td.bad{color:#b00;font-weight:bold} .hist{display:inline-block;margin:0 12px 8px 0}
.hist svg,.chart svg{background:#fbfbfd;border:1px solid #e3e3e8}
#controls{display:none;gap:6px} #controls.on{display:flex} button{cursor:pointer}
#details{font-family:monospace;white-space:pre;font-size:12px} small{color:#666}
</style></head><body>
)HTML";
}

// The page's fixed layout; the script fills in the tables and figures by their ids.
constexpr std::string_view page_body() {
  return R"HTML(<header><b>rtcosimd</b><span id="state">connecting</span><span id="config"></span>
<span id="updated"></span><span style="flex:1"></span>
<input id="token" type="password" placeholder="token (actions)" size="14">
<span id="controls"><button data-cmd="start">start</button><button data-cmd="stop">stop</button>
<button data-cmd="reload">reload</button><input id="recfile" placeholder="run.csv" size="10">
<button data-cmd="record-start">record</button><button data-cmd="record-stop">stop recording</button></span>
<span id="reply"></span></header>
<main>
<section class="wide"><h2>Tasks <small>frames, overruns and missed periods since start; latency = wake-up − release, execution = frame start → end (docs/figures.md)</small></h2>
<table id="tasks"><thead><tr><th>task</th><th>cpu</th><th>prio</th><th>frames</th><th>overruns</th><th>missed</th>
<th>latency p50</th><th>p99</th><th>max</th><th>exec p50</th><th>p99</th><th>max</th><th>step</th><th>lag</th>
<th>stalls</th><th>owed</th><th>local error</th></tr></thead><tbody></tbody></table></section>
<section><h2>Wake-up latency <small>counts per bucket (4 per octave), log time axis</small></h2><div id="lat"></div></section>
<section><h2>Execution time</h2><div id="exec"></div></section>
<section><h2>Links</h2><table id="links"><thead><tr><th>link</th><th>method</th><th>published</th><th>dropped</th>
<th>stale</th><th>beyond horizon</th><th>data age mean</th><th>max</th><th>longest gap</th></tr></thead><tbody></tbody></table></section>
<section><h2>Graph <small>click a task or a block</small> <small id="layoutnote"></small></h2><div id="graph"></div><div id="details"></div></section>
<section class="wide"><h2>Signals <small>the graph's record: signals, and any output probed here</small>
<label><input type="checkbox" id="pause"> pause</label>
<label>window <input id="window" type="number" value="5" min="0.1" step="0.5" style="width:4em"> s</label></h2>
<div><input id="probe" list="probeable" placeholder="BLOCK.PORT" size="24"><datalist id="probeable"></datalist>
<button id="probebtn">probe</button> <small id="probereply">any output of the running graph (4 at a time)</small></div>
<div id="picks"></div><div class="chart" id="chart"></div></section>
<section class="wide"><h2>Step size over time <small>the last step of each task, as pushed</small></h2><div class="chart" id="steps"></div></section>
</main>
)HTML";
}

// Drawing helpers first: render() below calls them on every push.
constexpr std::string_view page_script_drawing() {
  return R"HTML(<script>
"use strict";
const $=s=>document.querySelector(s);
const esc=s=>String(s).replace(/[&<>"']/g,c=>({"&":"&amp;","<":"&lt;",">":"&gt;",'"':"&quot;","'":"&#39;"}[c]));
const us=ns=>ns==null?"-":(ns/1000).toFixed(1)+" µs";
const ms=s=>s==null?"-":(s*1000).toFixed(3)+" ms";
const colors=["#1f77b4","#d62728","#2ca02c","#ff7f0e","#9467bd","#8c564b","#e377c2","#17becf"];
let last=null, picked=new Set(), series={}, steps={}, firstSeries=true, layoutVersion=-1;
function table(id,rows){$(id+" tbody").innerHTML=rows.join("");}
function histogram(name,buckets){
  const w=300,h=90; const n=buckets.length;
  const max=Math.max(1,...buckets.map(b=>b[1]));
  const lo=n?Math.log2(Math.max(1,buckets[0][0]/1.25)):0, hi=n?Math.log2(buckets[n-1][0]):1;
  const x=v=>8+(w-16)*(Math.log2(v)-lo)/Math.max(1e-9,hi-lo);
  let bars="";
  for(const [upper,count] of buckets){
    const bh=Math.max(1,(h-22)*Math.log10(1+count)/Math.log10(1+max));
    bars+=`<rect x="${x(upper)-3}" y="${h-14-bh}" width="5" height="${bh}" fill="#1f77b4"><title>≤ ${us(upper)}: ${count}</title></rect>`;
  }
  const axis=n?`<text x="4" y="${h-2}" font-size="10">${us(buckets[0][0])}</text><text x="${w-4}" y="${h-2}" font-size="10" text-anchor="end">${us(buckets[n-1][0])}</text>`:"";
  return `<div class="hist"><div>${esc(name)}</div><svg width="${w}" height="${h}" data-bars="${n}">${bars}${axis}</svg></div>`;
}
function chart(el,lines,window){
  const w=Math.max(400,el.clientWidth-4),h=180;
  let tmax=-Infinity,vmin=Infinity,vmax=-Infinity;
  for(const l of lines) for(let i=0;i<l.t.length;i++) tmax=Math.max(tmax,l.t[i]);
  const tmin=tmax-window;
  for(const l of lines) for(let i=0;i<l.t.length;i++) if(l.t[i]>=tmin){vmin=Math.min(vmin,l.v[i]);vmax=Math.max(vmax,l.v[i]);}
  if(!isFinite(vmin)){el.innerHTML=`<svg width="${w}" height="${h}"></svg>`;return;}
  if(vmax===vmin){vmax+=1;vmin-=1;}
  const X=t=>50+(w-60)*(t-tmin)/window, Y=v=>h-20-(h-30)*(v-vmin)/(vmax-vmin);
  let out="";
  lines.forEach((l,k)=>{let p="";for(let i=0;i<l.t.length;i++) if(l.t[i]>=tmin) p+=`${X(l.t[i]).toFixed(1)},${Y(l.v[i]).toFixed(1)} `;
    out+=`<polyline fill="none" stroke="${colors[k%8]}" stroke-width="1.5" points="${p}"/>`+
         `<text x="${60+k*160}" y="12" font-size="11" fill="${colors[k%8]}">${esc(l.name)}</text>`;});
  out+=`<text x="2" y="${Y(vmax)+4}" font-size="10">${vmax.toPrecision(4)}</text><text x="2" y="${Y(vmin)}" font-size="10">${vmin.toPrecision(4)}</text>`;
  out+=`<text x="${w-4}" y="${h-4}" font-size="10" text-anchor="end">t = ${tmax.toFixed(2)} s</text>`;
  el.innerHTML=`<svg width="${w}" height="${h}" data-lines="${lines.length}">${out}</svg>`;
}
function drawGraph(g){
  if(!g) return;
  const n=g.tasks.length, w=Math.max(360,140*n), h=150, pos={};
  g.tasks.forEach((t,i)=>pos[t.name]={x:20+i*(w-40)/Math.max(1,n)+10,y:55});
  let out=`<defs><marker id="arr" viewBox="0 0 10 10" refX="9" refY="5" markerWidth="7" markerHeight="7" orient="auto"><path d="M0,0L10,5L0,10z" fill="#d62728"/></marker></defs>`;
  g.edges.forEach((e,k)=>{const a=pos[e.from],b=pos[e.to];if(!a||!b)return;const up=(k%2?1:-1)*(30+8*k);
    out+=`<path d="M${a.x+55},${a.y+(up<0?0:30)} Q${(a.x+b.x)/2+55},${a.y+15+up} ${b.x+55},${b.y+(up<0?0:30)}" fill="none" stroke="#d62728" marker-end="url(#arr)"><title>${esc(e.signal)} → ${esc(e.to)} (${esc(e.method)})</title></path>`;});
  g.tasks.forEach(t=>{const p=pos[t.name];out+=`<g class="task" data-task="${esc(t.name)}" style="cursor:pointer"><rect x="${p.x}" y="${p.y}" width="110" height="30" rx="6" fill="#eef3fb" stroke="#1f2d3d"/><text x="${p.x+55}" y="${p.y+19}" text-anchor="middle" font-size="12">${esc(t.name)}</text></g>`;});
  $("#graph").innerHTML=`<svg width="${w}" height="${h}" data-layout="page">${out}</svg>`;
  clickable();
}
function clickable(){
  document.querySelectorAll("#graph [data-task]").forEach(el=>{el.style.cursor="pointer";el.onclick=()=>{
    const t=((last.status||{}).tasks||[]).find(x=>x.name===el.dataset.task);$("#details").textContent=JSON.stringify(t,null,1);};});
}
// The daemon's Graphviz layout (the DOT of `rtcosim check --dot`): each
// task's cluster and each block open the task's details.
function showSvg(text,g){
  $("#graph").innerHTML=text; const svg=$("#graph svg"); if(!svg){drawGraph(g);return;}
  svg.setAttribute("data-layout","dot"); svg.style.maxWidth="100%"; svg.style.height="auto";
  svg.querySelectorAll("g.cluster,g.node").forEach(el=>{const title=(el.querySelector("title")||{}).textContent||"";
    const task=el.classList.contains("cluster")?title.replace(/^cluster_/,""):(g.blocks||{})[title];
    if(task) el.setAttribute("data-task",task);});
  clickable();
}
)HTML";
}

// One push of the WebSocket (or /status.json) redraws everything from its JSON.
constexpr std::string_view page_script_render() {
  return R"HTML(function render(s){
  last=s; const st=s.status||{}; const live=s.live||{};
  const failed=s.failed||[];
  $("#state").textContent=failed.length?"failed: "+failed.map(f=>f.task+": "+f.failure).join("; "):s.running?"running":"stopped";
  $("#state").className=s.running&&!failed.length?"run":"stop";
  $("#config").textContent=s.config||""; $("#updated").textContent="t = "+(live.t||0).toFixed(1)+" s";
  table("#tasks",(st.tasks||[]).map(t=>`<tr id="task-${esc(t.name)}"><td>${esc(t.name)}</td><td>${t.cpu}</td><td>${t.priority}</td>`+
    `<td id="frames-${esc(t.name)}">${t.frames}</td><td class="${t.overruns?"bad":""}">${t.overruns}</td><td class="${t.missed_periods?"bad":""}">${t.missed_periods}</td>`+
    `<td>${us(t.latency_ns&&t.latency_ns.p50)}</td><td>${us(t.latency_ns&&t.latency_ns.p99)}</td><td>${us(t.latency_ns&&t.latency_ns.max)}</td>`+
    `<td>${us(t.exec_ns&&t.exec_ns.p50)}</td><td>${us(t.exec_ns&&t.exec_ns.p99)}</td><td>${us(t.exec_ns&&t.exec_ns.max)}</td>`+
    `<td>${t.step_s?(t.step_s.last*1000).toFixed(3)+" ms":"-"}</td><td>${t.lag_s?(t.lag_s.last*1e6).toFixed(1)+" µs":"-"}</td>`+
    `<td class="${t.stalls&&t.stalls.count>t.stalls.absorbed?"bad":""}">${t.stalls?t.stalls.absorbed+"/"+t.stalls.count:"-"}</td>`+
    `<td class="${t.stalls&&t.stalls.owed_s>0?"bad":""}">${t.stalls?ms(t.stalls.owed_s):"-"}</td>`+
    `<td class="${t.failure?"bad":""}">${t.local_error?t.local_error.last.toPrecision(2):"-"}</td></tr>`));
  table("#links",(st.links||[]).map(l=>`<tr><td>${esc(l.from)} → ${esc(l.to)}</td><td>${esc(l.method)}</td><td>${l.published}</td>`+
    `<td class="${l.dropped?"bad":""}">${l.dropped}</td><td>${l.stale}</td><td class="${l.beyond_horizon_frames?"bad":""}">${l.beyond_horizon_frames}</td>`+
    `<td>${ms(l.data_age_s&&l.data_age_s.mean)}</td><td>${ms(l.data_age_s&&l.data_age_s.max)}</td><td>${ms(l.longest_gap_s)}</td></tr>`));
  const h=live.hist||{};
  $("#lat").innerHTML=Object.keys(h).map(k=>histogram(k,h[k].latency||[])).join("");
  $("#exec").innerHTML=Object.keys(h).map(k=>histogram(k,h[k].exec||[])).join("");
  const L=live.graph&&live.graph.layout;
  if(L && L.version!==layoutVersion){ layoutVersion=L.version; const g=live.graph;
    if(L.svg){ $("#layoutnote").textContent="laid out by Graphviz";
      fetch("/graph.svg").then(r=>r.ok?r.text():Promise.reject(r.status)).then(t=>showSvg(t,g)).catch(()=>drawGraph(g)); }
    else { $("#layoutnote").textContent="drawn by the page, not Graphviz: "+(L.why||""); drawGraph(g); } }
  else if(!L && live.graph && !$("#graph svg")) drawGraph(live.graph);
  const merge=(key,x,pick)=>{
    const S=series[key]||(series[key]={name:key,t:[],v:[]});
    // A new run (stop, start) begins again at t = 0: so does its chart.
    if(x.t.length&&S.t.length&&x.t[x.t.length-1]<S.t[S.t.length-1]){S.t=[];S.v=[];}
    const since=S.t.length?S.t[S.t.length-1]:-Infinity;
    for(let i=0;i<x.t.length;i++) if(x.t[i]>since){S.t.push(x.t[i]);S.v.push(x.v[i]);}
    while(S.t.length>20000){S.t.shift();S.v.shift();}
    if(!document.getElementById("pick-"+key)){
      const id="pick-"+key; if(pick) picked.add(key);
      $("#picks").insertAdjacentHTML("beforeend",`<label><input type="checkbox" id="${esc(id)}" ${pick?"checked":""}> ${esc(key)}</label> `);
      document.getElementById(id).onchange=e=>{e.target.checked?picked.add(key):picked.delete(key);};
    }
  };
  for(const x of live.series||[]) merge(x.signal,x,firstSeries&&picked.size<3);
  if((live.series||[]).length) firstSeries=false;
  for(const x of live.probes||[]) merge(x.signal+" (probe)",x,true);
  const names=(live.graph&&live.graph.signals)||[];
  if(names.length!==$("#probeable").children.length) $("#probeable").innerHTML=names.map(n=>`<option value="${esc(n)}">`).join("");
  for(const t of st.tasks||[]){ if(!t.step_s) continue; const S=steps[t.name]||(steps[t.name]={name:t.name+" step (ms)",t:[],v:[]});
    S.t.push(live.t||0); S.v.push(t.step_s.last*1000); if(S.t.length>3000){S.t.shift();S.v.shift();} }
  if(!$("#pause").checked){ const win=Math.max(0.1,+$("#window").value||5);
    chart($("#chart"),[...picked].map(k=>series[k]).filter(Boolean),win);
    chart($("#steps"),Object.values(steps),Math.max(win,10)); }
}
)HTML";
}

// Connection, token and actions run last, once every function above is defined.
constexpr std::string_view page_script_connect() {
  return R"HTML(// The WebSocket opens after /whoami has shown the token: the answer gives
// this browser a place cookie (HttpOnly), which the WebSocket's request
// carries where no token can go, so that it gets one of the places kept
// for token holders (docs/live.md, "Places"). Each reconnect renews it.
let pushes=0;
function connect(){
  whoami().catch(()=>{}).finally(()=>{
    const ws=new WebSocket((location.protocol==="https:"?"wss://":"ws://")+location.host+"/ws");
    ws.onmessage=e=>{document.body.dataset.pushes=++pushes;try{render(JSON.parse(e.data));}catch(err){console.log(err);}};
    ws.onclose=()=>{$("#state").textContent="disconnected";$("#state").className="stop";setTimeout(connect,1000);};
  });
}
function auth(){const t=$("#token").value;return t?{"Authorization":"Bearer "+t}:{};}
async function whoami(){
  const r=await fetch("/whoami",{headers:auth()}); const j=await r.json();
  $("#controls").className=j.act?"on":"";
}
// A token from `rtcosim ctl web-token` comes in the address (#token=…):
// kept for this tab, and taken out of the address bar and its history.
const given=/^#token=([0-9a-f]{16,128})$/.exec(location.hash);
if(given){sessionStorage.setItem("rtcosim-token",given[1]);history.replaceState(null,"",location.pathname);}
$("#token").value=sessionStorage.getItem("rtcosim-token")||"";
$("#token").onchange=()=>{sessionStorage.setItem("rtcosim-token",$("#token").value);whoami();};
document.querySelectorAll("#controls button").forEach(b=>b.onclick=async()=>{
  const c=b.dataset.cmd; let body={cmd:c};
  if(c==="record-start") body={cmd:"record",action:"start",file:$("#recfile").value||"run.csv"};
  if(c==="record-stop") body={cmd:"record",action:"stop"};
  const r=await fetch("/action",{method:"POST",headers:Object.assign({"Content-Type":"application/json"},auth()),body:JSON.stringify(body)});
  $("#reply").textContent=(await r.text()).slice(0,160);
});
$("#probebtn").onclick=async()=>{
  const r=await fetch("/probe",{method:"POST",headers:{"Content-Type":"application/json"},body:JSON.stringify({signal:$("#probe").value})});
  const j=await r.json(); $("#probereply").textContent=j.ok?`slot ${j.slot}: ${j.signal} (task ${j.task})`:j.error;
};
fetch("/status.json").then(r=>r.json()).then(render).catch(()=>{});
connect();
</script></body></html>
)HTML";
}

// In the order the browser needs them: style, layout, then the script that fills it.
constexpr std::array kPageParts{page_head(), page_body(), page_script_drawing(), page_script_render(),
                                page_script_connect()};

constexpr std::size_t page_size() {
  std::size_t size = 0;
  for (std::string_view part : kPageParts) size += part.size();
  return size;
}

// Joined at compile time into one C string, as the single literal was: serving
// the page allocates nothing and cannot throw.
constexpr std::array<char, page_size() + 1> join_page() {
  std::array<char, page_size() + 1> page{};
  std::size_t at = 0;
  for (std::string_view part : kPageParts) {
    for (char c : part) page[at++] = c;
  }
  page[at] = '\0';
  return page;
}

constexpr auto kPage = join_page();

}  // namespace

// One page, everything inline: the daemon may run on a machine without any
// network but the operator's SSH tunnel. The figures it shows are those of
// the control socket's status (docs/figures.md); docs/live.md says which.
const char* live_page() noexcept { return kPage.data(); }

}  // namespace rtcosim::daemon
