import { API, SymbolFlags } from "typescript/unstable/async";
const api = new API({ cwd: "/work/wt-api" });
const snap = await api.updateSnapshot({ openProject: "/work/wt-api/tsconfig.json" } as never);
const project = snap.getProjects()[0]!;
const checker = project.checker;
const sf = await project.program.getSourceFile("/work/wt-api/ts/index.ts");
const modSym = await checker.getSymbolAtLocation(sf as never);
let documented = 0, total = 0; const missing: string[] = [];
async function visit(prefix: string, mod: any) {
  for (const s of await checker.getExportsOfModule(mod)) {
    const sym = (s.flags & SymbolFlags.Alias) ? await checker.getAliasedSymbol(s) : s;
    if (sym.flags & SymbolFlags.Module) { await visit(prefix + s.name + ".", sym); continue; }
    if (!(sym.flags & (SymbolFlags.Function | SymbolFlags.Variable | SymbolFlags.Class))) continue;
    let doc = await sym.getDocumentationComment(checker);
    const decl: any = await sym.valueDeclaration?.resolve(project);
    if (!doc && decl?.kind === 209) {
      let n: any = decl; while (n && !(n.initializer && n.name?.elements)) n = n.parent;
      if (n?.initializer) { const t = await checker.getTypeAtLocation(n.initializer); const p = await checker.getPropertyOfType(t!, s.name); if (p) doc = await p.getDocumentationComment(checker); }
    }
    total++; if (doc) documented++; else missing.push(prefix + s.name);
  }
}
await visit("", modSym);
console.log(documented, "/", total); console.log(missing.join(" "));
await api.close();
