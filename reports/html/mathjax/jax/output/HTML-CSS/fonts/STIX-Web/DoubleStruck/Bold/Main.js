/*
 *  /MathJax-v2/jax/output/HTML-CSS/fonts/STIX-Web/DoubleStruck/Bold/Main.js
 *
 *  Copyright (c) 2009-2018 The MathJax Consortium
 *
 *  Licensed under the Apache License, Version 2.0 (the "License");
 *  you may not use this file except in compliance with the License.
 *  You may obtain a copy of the License at
 *
 *      http://www.apache.org/licenses/LICENSE-2.0
 *
 *  Unless required by applicable law or agreed to in writing, software
 *  distributed under the License is distributed on an "AS IS" BASIS,
 *  WITHOUT WARRANTIES OR CONDITIONS OF ANY KIND, either express or implied.
 *  See the License for the specific language governing permissions and
 *  limitations under the License.
 */

MathJax.OutputJax["HTML-CSS"].FONTDATA.FONTS["STIXMathJax_DoubleStruck-bold"]={directory:"DoubleStruck/Bold",family:"STIXMathJax_DoubleStruck",weight:"bold",testString:"\u00A0\u2102\u210D\u2115\u2119\u211A\u211D\u2124\u213C\u213D\u213E\u213F\u2140\uD835\uDD38\uD835\uDD39",32:[0,0,250,0,0],160:[0,0,250,0,0],8450:[691,19,727,45,672],8461:[676,0,768,75,693],8469:[676,0,738,75,663],8473:[676,0,700,75,670],8474:[691,64,797,45,747],8477:[676,0,783,75,758],8484:[691,0,777,52,727],8508:[461,11,804,55,759],8509:[486,203,646,23,624],8510:[676,0,497,75,643],8511:[676,0,768,75,693],8512:[773,269,976,36,952],120120:[676,0,787,50,737],120121:[676,0,729,75,669],120123:[676,0,748,75,703],120124:[676,0,650,75,595],120125:[676,0,474,75,595],120126:[691,19,751,45,686],120128:[676,0,380,80,300],120129:[676,19,618,50,548],120130:[676,0,792,75,767],120131:[676,0,662,70,607],120132:[676,0,914,75,839],120134:[691,19,787,45,742],120138:[692,19,702,45,657],120139:[676,0,556,25,645],120140:[676,19,738,70,668],120141:[676,0,627,17,704],120142:[676,0,996,17,1015],120143:[676,0,794,20,769],120144:[676,0,652,23,739],120146:[473,14,623,50,563],120147:[676,14,643,60,593],120148:[473,14,574,50,524],120149:[676,14,643,50,583],120150:[473,14,573,50,523],120151:[676,0,474,25,536],120152:[473,205,643,50,583],120153:[676,0,624,60,564],120154:[691,0,330,65,265],120155:[691,205,371,-20,311],120156:[676,0,646,60,621],120157:[676,0,325,60,265],120158:[473,0,908,60,848],120159:[473,0,624,60,564],120160:[473,14,598,45,553],120161:[473,205,643,60,593],120162:[473,205,643,50,583],120163:[473,0,339,60,445],120164:[473,14,549,52,497],120165:[676,14,446,25,411],120166:[461,16,619,55,559],120167:[461,0,494,6,544],120168:[461,0,786,22,789],120169:[461,0,660,25,635],120170:[461,205,471,-9,537],120171:[461,0,513,40,473]};MathJax.Callback.Queue(["initFont",MathJax.OutputJax["HTML-CSS"],"STIXMathJax_DoubleStruck-bold"],["loadComplete",MathJax.Ajax,MathJax.OutputJax["HTML-CSS"].fontDir+"/DoubleStruck/Bold/Main.js"]);
