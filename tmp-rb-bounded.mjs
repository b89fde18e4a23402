import * as jinja from '@huggingface/jinja';
class Bounded extends jinja.Interpreter { steps = 0; evaluate(node, env) { if (++this.steps > 5e6) throw new Error('template too expensive'); return super.evaluate(node, env); } }
const t = new jinja.Template('{% for a in range(65536) %}{% for b in range(65536) %}{% endfor %}{% endfor %}x');
const env = new jinja.Environment(); env.set('range', (n) => Array.from({ length: n }, (_, i) => i));
const t0 = Date.now();
try { new Bounded(env).run(t.parsed); } catch (e) { console.log('stopped:', e.message, Date.now() - t0, 'ms'); }
