// The console's entry: mounts the app into the shell's #app.
import { render } from 'preact';
import { App } from './App.js';
import './style.css';

render(<App />, document.getElementById('app')!);
