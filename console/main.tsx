// The console's entry: mounts the app into the shell's #app.
import { render } from 'preact';
import { App } from './App.js';
import { showInvisibleCharacters } from './lib/visibleText.js';
import './style.css';

showInvisibleCharacters();
const root = document.getElementById('app')!;
// The shell's "Loading the console…" goes: Preact renders into the element, it does not replace what is there.
root.textContent = '';
render(<App />, root);
