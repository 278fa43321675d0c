// The console's entry: mounts the app into the shell's #app.
import { render } from 'preact';
import { App } from './App.js';
import './style.css';

const root = document.getElementById('app')!;
// The shell's "Loading the console…" goes: Preact renders into the element, it does not replace what is there.
root.textContent = '';
render(<App />, root);
